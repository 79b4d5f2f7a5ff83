#include "rerank/shortlist_reranker.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/parallel.h"
#include "rerank/hashed_weights.h"

namespace slide {

namespace {

constexpr std::int64_t kRowsPerTask = 64;
constexpr float kEpsilon = 1e-8f;  // a slot whose gradients were all zero takes no step

using Slot = HashedSlot;

// Hashes every (label, feature) slot of a row's shortlist, label by label, and asks for their
// cache lines: the table is far larger than the caches, so each slot is a miss, and issued
// together the misses overlap instead of each pair waiting for its own in turn.
inline void hash_shortlist(const CsrFloat& x, std::int64_t row, const std::vector<std::int32_t>& labels,
                           const RerankerWeights& w, std::vector<Slot>& slots) {
  const std::int64_t mask = w.size - 1, begin = x.indptr[row], n = x.indptr[row + 1] - begin;
  slots.resize(labels.size() * static_cast<std::size_t>(n));
  Slot* out = slots.data();
  for (const std::int32_t label : labels) {
    __builtin_prefetch(w.bias + 2 * label, 1);
    for (std::int64_t i = 0; i < n; ++i, ++out) {
      *out = slot_of(label, x.indices[begin + i], mask);
      __builtin_prefetch(w.slots + 2 * out->index, 1);
    }
  }
}

// Scores `label` for `row` and takes its Adagrad step on the logistic loss (target 1 for a
// positive), at the slots `hash_shortlist` found. Returns the loss.
inline double train_pair(const CsrFloat& x, std::int64_t row, std::int32_t label, bool positive,
                         const RerankerWeights& w, float lr, const Slot* slots) {
  const std::int64_t begin = x.indptr[row], n = x.indptr[row + 1] - begin;
  float* const bias = w.bias + 2 * label;
  float s = bias[0];
  for (std::int64_t i = 0; i < n; ++i) s += x.data[begin + i] * slots[i].sign * w.slots[2 * slots[i].index];
  const float p = 1.0f / (1.0f + std::exp(-s));
  const float gradient = p - (positive ? 1.0f : 0.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    float* const weight = w.slots + 2 * slots[i].index;
    const float g = gradient * x.data[begin + i] * slots[i].sign;
    weight[1] += g * g;
    weight[0] -= lr * g / std::sqrt(weight[1] + kEpsilon);
  }
  bias[1] += gradient * gradient;
  bias[0] -= lr * gradient / std::sqrt(bias[1] + kEpsilon);
  return positive ? -std::log(std::max(p, 1e-12f)) : -std::log(std::max(1.0f - p, 1e-12f));
}

struct Local {
  std::vector<std::int32_t> shortlist;
  std::vector<Slot> slots;
};

}  // namespace

void reranker_scores(const CsrFloat& x, const std::int64_t* rows, const std::int32_t* labels, std::int64_t pairs,
                     const RerankerWeights& w, float* out, int threads) {
  parallel_for(threads, pairs, [&](std::int64_t p) { out[p] = score_of(x, rows[p], labels[p], w); });
}

double reranker_epoch(const CsrFloat& x, const CsrIds& y, const std::int32_t* candidates, int width,
                      const std::int64_t* order, std::int64_t count, const RerankerWeights& w, float lr,
                      int threads) {
  double loss = 0.0;
  std::int64_t scored = 0;
  parallel_for(
      threads, count, kRowsPerTask, [] { return Local{}; },
      [&](Local& local, std::int64_t i) {
        const std::int64_t row = order[i];
        const std::int32_t* positives = y.indices + y.indptr[row];
        const std::int32_t* positives_end = y.indices + y.indptr[row + 1];
        local.shortlist.assign(positives, positives_end);
        const std::int32_t* own = candidates + row * static_cast<std::int64_t>(width);
        for (int c = 0; c < width; ++c)
          if (own[c] >= 0 && std::find(positives, positives_end, own[c]) == positives_end)
            local.shortlist.push_back(own[c]);
        const std::size_t n_positive = static_cast<std::size_t>(positives_end - positives);
        const std::size_t nnz = static_cast<std::size_t>(x.indptr[row + 1] - x.indptr[row]);
        hash_shortlist(x, row, local.shortlist, w, local.slots);
        double row_loss = 0.0;
        for (std::size_t j = 0; j < local.shortlist.size(); ++j)
          row_loss += train_pair(x, row, local.shortlist[j], j < n_positive, w, lr, local.slots.data() + j * nnz);
#pragma omp atomic
        loss += row_loss;
#pragma omp atomic
        scored += static_cast<std::int64_t>(local.shortlist.size());
      });
  return scored ? loss / static_cast<double>(scored) : 0.0;
}

}  // namespace slide
