#include "rerank/dual_cd_hinge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "common/parallel.h"
#include "common/rng.h"
#include "rerank/hashed_weights.h"

namespace slide {

namespace {

// One thread's scratch for one label at a time. The label's weights are gathered from the table
// into a dense vector over the features its points use, solved there, and the change written
// back: solving against the table itself missed the cache on every feature of every step (debian-
// deps, 2 threads: 7.4 s against 2.2 s gathered; liblinear through scikit-learn, 14.7 s).
struct Local {
  std::vector<float> alpha, diagonal, weights, start;
  std::vector<std::int64_t> order;
  std::vector<std::int32_t> features, place;  // place[f]: f's index in features, or -1
  std::vector<std::int32_t> local;             // per nonzero of the label's points: its feature's index
  std::vector<std::int64_t> offsets;           // each point's first nonzero in `local`
};

void gather(const CsrFloat& x, const LabelPoints& points, std::int32_t label, const RerankerWeights& w, Local& l) {
  const std::int64_t begin = points.indptr[label], n = points.indptr[label + 1] - begin, mask = w.size - 1;
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
  l.weights.resize(l.features.size());
  for (std::size_t f = 0; f < l.features.size(); ++f) {
    const HashedSlot slot = slot_of(label, l.features[f], mask);
    l.weights[f] = slot.sign * w.slots[2 * slot.index];
  }
  l.start = l.weights;
}

// The label's score of its i-th point, through the gathered weights.
float score_of_point(const CsrFloat& x, const LabelPoints& points, std::int64_t begin, std::int64_t i, float bias,
                     const Local& l) {
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
               Local& l) {
  const std::int64_t row = points.rows[begin + i];
  const float* values = x.data + x.indptr[row];
  const std::int32_t* at = l.local.data() + l.offsets[static_cast<std::size_t>(i)];
  for (std::int64_t j = 0, nnz = x.indptr[row + 1] - x.indptr[row]; j < nnz; ++j)
    l.weights[static_cast<std::size_t>(at[j])] += step * values[j];
}

// Writes the change to the label's weights back into the table (slots it shares with another
// label keep that label's part), the local view's change over `adders` (the view holds it that
// many times over), and clears `place` for the next label.
void scatter(std::int32_t label, const RerankerWeights& w, float adders, Local& l) {
  const std::int64_t mask = w.size - 1;
  for (std::size_t f = 0; f < l.features.size(); ++f) {
    const HashedSlot slot = slot_of(label, l.features[f], mask);
    w.slots[2 * slot.index] += slot.sign * (l.weights[f] - l.start[f]) / adders;
    l.place[static_cast<std::size_t>(l.features[f])] = -1;
  }
}

// Solves one label and returns its squared hinge loss summed over its points, scored with the
// weights it solved for (labels that share a slot with it may move the table's copy afterwards).
double train_label(const CsrFloat& x, const LabelPoints& points, std::int32_t label, const RerankerWeights& w,
                   const DualCdSettings& s, Local& l) {
  const std::int64_t begin = points.indptr[label], n = points.indptr[label + 1] - begin;
  const float half_inverse_c = 0.5f / s.c;  // the squared hinge's diagonal term, D_ii = 1 / (2C)
  gather(x, points, label, w, l);
  float bias = w.bias[2 * label];
  const float start_bias = bias;
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
  scatter(label, w, s.adders, l);
  w.bias[2 * label] += (bias - start_bias) / s.adders;
  if (points.alpha) std::copy(l.alpha.begin(), l.alpha.end(), points.alpha + begin);
  return loss;
}

}  // namespace

double reranker_dual_cd(const CsrFloat& x, const LabelPoints& points, const RerankerWeights& w,
                        const DualCdSettings& settings, int threads) {
  // Each label's loss from its own gathered weights: scoring every (point, label) pair through
  // the hashed table afterwards missed the cache on every feature (1.1 s of debian-deps' 4.9 M pairs).
  std::vector<double> loss(static_cast<std::size_t>(w.labels), 0.0);
  parallel_for(
      threads, w.labels, 16, [] { return Local{}; },
      [&](Local& local, std::int64_t label) {
        if (points.indptr[label + 1] > points.indptr[label])
          loss[static_cast<std::size_t>(label)] =
              train_label(x, points, static_cast<std::int32_t>(label), w, settings, local);
      });
  const std::int64_t total = points.indptr[w.labels];
  return total ? std::accumulate(loss.begin(), loss.end(), 0.0) / static_cast<double>(total) : 0.0;
}

}  // namespace slide
