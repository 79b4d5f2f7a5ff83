#include "rerank/gathered_label.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/rng.h"

namespace slide {

namespace {

// The label's score of its i-th point, through the gathered weights.
float score_of_point(const CsrFloat& x, const LabelPoints& points, std::int64_t begin, std::int64_t i, float bias,
                     const GatheredLabel& l) {
  const std::int64_t row = points.rows[begin + i];
  const float* values = x.data + x.indptr[row];
  const std::int32_t* at = l.local.data() + l.offsets[static_cast<std::size_t>(i)];
  float score = bias;
  for (std::int64_t j = 0, nnz = x.indptr[row + 1] - x.indptr[row]; j < nnz; ++j)
    score += values[j] * l.weights[static_cast<std::size_t>(at[j])];
  return score;
}

// weights += step x the label's i-th point.
void add_point(const CsrFloat& x, const LabelPoints& points, std::int64_t begin, std::int64_t i, float step,
               GatheredLabel& l) {
  const std::int64_t row = points.rows[begin + i];
  const float* values = x.data + x.indptr[row];
  const std::int32_t* at = l.local.data() + l.offsets[static_cast<std::size_t>(i)];
  for (std::int64_t j = 0, nnz = x.indptr[row + 1] - x.indptr[row]; j < nnz; ++j)
    l.weights[static_cast<std::size_t>(at[j])] += step * values[j];
}

}  // namespace

void gather_features(const CsrFloat& x, const LabelPoints& points, std::int32_t label, GatheredLabel& l) {
  const std::int64_t begin = points.indptr[label], n = points.indptr[label + 1] - begin;
  if (l.place.size() < static_cast<std::size_t>(x.cols)) l.place.assign(static_cast<std::size_t>(x.cols), -1);
  l.features.clear();
  l.local.clear();
  l.offsets.assign(1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = points.rows[begin + i];
    for (std::int64_t j = x.indptr[row]; j < x.indptr[row + 1]; ++j) {
      std::int32_t& at = l.place[static_cast<std::size_t>(x.indices[j])];
      if (at < 0) {
        at = static_cast<std::int32_t>(l.features.size());
        l.features.push_back(x.indices[j]);
      }
      l.local.push_back(at);
    }
    l.offsets.push_back(static_cast<std::int64_t>(l.local.size()));
  }
  l.weights.assign(l.features.size(), 0.0f);
}

void release_features(GatheredLabel& l) {
  for (const std::int32_t f : l.features) l.place[static_cast<std::size_t>(f)] = -1;
}

double solve_gathered(const CsrFloat& x, const LabelPoints& points, std::int32_t label, const DualCdSettings& s,
                      float& bias, GatheredLabel& l) {
  const std::int64_t begin = points.indptr[label], n = points.indptr[label + 1] - begin;
  const float half_inverse_c = 0.5f / s.c;  // the squared hinge's diagonal term, D_ii = 1 / (2C)
  if (points.alpha)
    l.alpha.assign(points.alpha + begin, points.alpha + begin + n);
  else
    l.alpha.assign(static_cast<std::size_t>(n), 0.0f);
  l.diagonal.resize(static_cast<std::size_t>(n));
  l.order.resize(static_cast<std::size_t>(n));
  std::iota(l.order.begin(), l.order.end(), std::int64_t{0});
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = points.rows[begin + i];
    float norm = 1.0f;  // the bias's feature
    for (std::int64_t j = x.indptr[row]; j < x.indptr[row + 1]; ++j) norm += x.data[j] * x.data[j];
    l.diagonal[static_cast<std::size_t>(i)] = s.adders * norm + half_inverse_c;
  }
  Rng rng(s.seed ^ (static_cast<std::uint64_t>(label) * 0xD1B54A32D192ED03ull));
  // liblinear's shrinking: a point at alpha = 0 whose gradient exceeds the last pass's largest
  // projected gradient leaves the passes (it would stay at 0); once the rest have converged,
  // every point comes back for a pass that checks the whole problem. Most of a label's points are
  // shortlisted negatives the weights already score far below -1.
  std::int64_t active = n;
  float shrink_above = std::numeric_limits<float>::infinity();
  for (int iteration = 0; iteration < s.max_iterations; ++iteration) {
    for (std::int64_t i = active - 1; i > 0; --i)
      std::swap(l.order[static_cast<std::size_t>(i)],
                l.order[static_cast<std::size_t>(rng.next() % static_cast<std::uint64_t>(i + 1))]);
    float highest = -std::numeric_limits<float>::infinity(), lowest = std::numeric_limits<float>::infinity();
    for (std::int64_t at_order = 0; at_order < active; ++at_order) {
      const std::int64_t i = l.order[static_cast<std::size_t>(at_order)];
      const float score = score_of_point(x, points, begin, i, bias, l);
      const float y = points.positive[begin + i] ? 1.0f : -1.0f;
      float& alpha = l.alpha[static_cast<std::size_t>(i)];
      const float gradient = y * score - 1.0f + half_inverse_c * alpha;
      float projected = gradient;
      if (alpha == 0.0f) {  // alpha >= 0
        if (gradient > shrink_above) {
          --active;
          std::swap(l.order[static_cast<std::size_t>(at_order)], l.order[static_cast<std::size_t>(active)]);
          --at_order;
          continue;
        }
        projected = std::min(gradient, 0.0f);
      }
      highest = std::max(highest, projected);
      lowest = std::min(lowest, projected);
      if (std::fabs(projected) <= 1e-12f) continue;
      const float updated = std::max(alpha - gradient / l.diagonal[static_cast<std::size_t>(i)], 0.0f);
      const float step = (updated - alpha) * y;
      add_point(x, points, begin, i, s.adders * step, l);
      bias += s.adders * step;
      alpha = updated;
    }
    if (highest - lowest <= s.tolerance) {
      if (active == n) break;
      active = n;  // converged without the shrunk points: check them all again
      shrink_above = std::numeric_limits<float>::infinity();
      continue;
    }
    shrink_above = highest > 0.0f ? highest : std::numeric_limits<float>::infinity();
  }
  double loss = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float score = score_of_point(x, points, begin, i, bias, l);
    const double margin = std::max(0.0f, 1.0f - (points.positive[begin + i] ? score : -score));
    loss += margin * margin;
  }
  if (points.alpha) std::copy(l.alpha.begin(), l.alpha.end(), points.alpha + begin);
  return loss;
}

}  // namespace slide
