// The shortlist re-ranker of slide.reranker: one sparse linear classifier per label over the input
// features, its weights hashed into one table (the hashing trick for many tasks, Weinberger et al.
// 2009), trained only on each point's shortlist (the network's top candidates and its own labels).
// A 128-unit network cannot hold which few words identify each of 40,000 labels; per-label
// weights over the words can, as in the tree methods' leaves, at the cost of a lookup per feature
// for each shortlisted label instead of a row per label over every feature.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"

namespace slide {

// Views over NumPy arrays the caller owns. `slots` interleaves each slot's weight with Adagrad's
// sum of its squared gradients (2 x size floats, size a power of two): a training step then
// misses the cache once per feature, not twice. `bias` likewise holds (bias, sum) per label.
struct RerankerWeights {
  float* slots = nullptr;
  std::int64_t size = 0;
  float* bias = nullptr;
  std::int64_t labels = 0;
};

// out[p] = bias[labels[p]] + sum over the features f of row rows[p] of x_f * sign * weight[slot],
// with (slot, sign) hashed from (label, f).
void reranker_scores(const CsrFloat& x, const std::int64_t* rows, const std::int32_t* labels, std::int64_t pairs,
                     const RerankerWeights& w, float* out, int threads);

// One epoch of Adagrad on the logistic loss over each row's shortlist: the `width` candidates of
// its row of `candidates` (-1 is no candidate) and its labels (positives; always included), rows
// visited in `order`, HOGWILD over `threads`. Returns the mean loss per shortlisted label.
double reranker_epoch(const CsrFloat& x, const CsrIds& y, const std::int32_t* candidates, int width,
                      const std::int64_t* order, std::int64_t count, const RerankerWeights& w, float lr,
                      int threads);

}  // namespace slide
