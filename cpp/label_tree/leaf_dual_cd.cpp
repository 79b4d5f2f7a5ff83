#include "label_tree/leaf_dual_cd.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/check.h"
#include "common/rng.h"
#include "simd/kernels.h"

namespace slide {

namespace {

// block.scores = each label's score of the leaf's i-th point.
void score_point(const Kernels& k, const CsrFloat& x, const LabelPoints& points, std::int64_t begin, std::int64_t i,
                 const GatheredLabel& l, std::size_t count, LeafBlock& block) {
  const std::int64_t row = points.rows[begin + i];
  const float* values = x.data + x.indptr[row];
  const std::int32_t* at = l.local.data() + l.offsets[static_cast<std::size_t>(i)];
  std::copy(block.bias.begin(), block.bias.end(), block.scores.begin());
  for (std::int64_t j = 0, nnz = x.indptr[row + 1] - x.indptr[row]; j < nnz; ++j)
    k.axpy(values[j], block.weights.data() + static_cast<std::size_t>(at[j]) * count, block.scores.data(), count);
}

}  // namespace

void solve_leaf(const CsrFloat& x, const LabelPoints& points, const std::int64_t* tasks, std::int64_t count,
                const DualCdSettings& s, const GatheredLabel& l, LeafBlock& block, double* losses) {
  SLIDE_ASSERT(count >= 1 && s.adders == 1.0f && points.alpha == nullptr);
  const Kernels& k = kernels();
  const auto g = static_cast<std::size_t>(count);
  const std::int64_t begin = points.indptr[tasks[0]], n = points.indptr[tasks[0] + 1] - begin;
  const float half_inverse_c = 0.5f / s.c;  // the squared hinge's diagonal term, D_ii = 1 / (2C)
  block.weights.assign(l.features.size() * g, 0.0f);
  block.bias.assign(g, 0.0f);
  block.scores.assign(g, 0.0f);
  block.steps.assign(g, 0.0f);
  block.highest.resize(g);
  block.lowest.resize(g);
  block.alpha.assign(static_cast<std::size_t>(n) * g, 0.0f);
  block.sign.resize(static_cast<std::size_t>(n) * g);
  for (std::size_t j = 0; j < g; ++j) {
    const std::uint8_t* positive = points.positive + points.indptr[tasks[j]];
    for (std::int64_t i = 0; i < n; ++i) block.sign[static_cast<std::size_t>(i) * g + j] = positive[i] ? 1.0f : -1.0f;
  }
  block.diagonal.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = points.rows[begin + i];
    float norm = 1.0f;  // the bias's feature
    for (std::int64_t j = x.indptr[row]; j < x.indptr[row + 1]; ++j) norm += x.data[j] * x.data[j];
    block.diagonal[static_cast<std::size_t>(i)] = norm + half_inverse_c;
  }
  block.order.resize(static_cast<std::size_t>(n));
  std::iota(block.order.begin(), block.order.end(), std::int64_t{0});
  Rng rng(s.seed ^ (static_cast<std::uint64_t>(tasks[0]) * 0xD1B54A32D192ED03ull));
  for (int iteration = 0; iteration < s.max_iterations; ++iteration) {
    for (std::int64_t i = n - 1; i > 0; --i)
      std::swap(block.order[static_cast<std::size_t>(i)],
                block.order[static_cast<std::size_t>(rng.next() % static_cast<std::uint64_t>(i + 1))]);
    std::fill(block.highest.begin(), block.highest.end(), -std::numeric_limits<float>::infinity());
    std::fill(block.lowest.begin(), block.lowest.end(), std::numeric_limits<float>::infinity());
    for (const std::int64_t i : block.order) {
      score_point(k, x, points, begin, i, l, g, block);
      float* alpha = block.alpha.data() + static_cast<std::size_t>(i) * g;
      const float* sign = block.sign.data() + static_cast<std::size_t>(i) * g;
      const float diagonal = block.diagonal[static_cast<std::size_t>(i)];
      bool steps = false;
      for (std::size_t j = 0; j < g; ++j) {
        const float gradient = sign[j] * block.scores[j] - 1.0f + half_inverse_c * alpha[j];
        const float projected = alpha[j] == 0.0f ? std::min(gradient, 0.0f) : gradient;  // alpha >= 0
        block.highest[j] = std::max(block.highest[j], projected);
        block.lowest[j] = std::min(block.lowest[j], projected);
        float step = 0.0f;
        if (std::fabs(projected) > 1e-12f) {
          const float updated = std::max(alpha[j] - gradient / diagonal, 0.0f);
          step = (updated - alpha[j]) * sign[j];
          alpha[j] = updated;
        }
        block.steps[j] = step;
        steps = steps || step != 0.0f;
      }
      if (!steps) continue;
      k.axpy(1.0f, block.steps.data(), block.bias.data(), g);
      const std::int64_t row = points.rows[begin + i];
      const float* values = x.data + x.indptr[row];
      const std::int32_t* at = l.local.data() + l.offsets[static_cast<std::size_t>(i)];
      for (std::int64_t j = 0, nnz = x.indptr[row + 1] - x.indptr[row]; j < nnz; ++j)
        k.axpy(values[j], block.steps.data(), block.weights.data() + static_cast<std::size_t>(at[j]) * g, g);
    }
    bool converged = true;
    for (std::size_t j = 0; j < g && converged; ++j) converged = block.highest[j] - block.lowest[j] <= s.tolerance;
    if (converged) break;
  }
  std::fill(losses, losses + count, 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    score_point(k, x, points, begin, i, l, g, block);
    const float* sign = block.sign.data() + static_cast<std::size_t>(i) * g;
    for (std::size_t j = 0; j < g; ++j) {
      const double margin = std::max(0.0f, 1.0f - sign[j] * block.scores[j]);
      losses[j] += margin * margin;
    }
  }
}

}  // namespace slide
