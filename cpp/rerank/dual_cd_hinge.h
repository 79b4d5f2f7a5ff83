// A second solver for the re-ranker's per-label classifiers (rerank/shortlist_reranker.h): for each
// label, the L2-regularised squared hinge over its training points (the rows whose shortlist holds
// the label, positive where it is one of the row's labels), solved by dual coordinate descent as
// liblinear solves it (Hsieh et al. 2008), the bias a feature of value 1. It is what omikuji's and
// Parabel's leaves train; on the same shortlists it re-ranks better than Adagrad on the logistic
// loss (benches/reranker_solver.py). A label's problem needs all of its points at once, so it
// trains from points in memory, not from a stream's shards.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "rerank/shortlist_reranker.h"

namespace slide {

// Each label's training points: rows[indptr[l] .. indptr[l + 1]) with positive[] beside them.
struct LabelPoints {
  const std::int64_t* indptr = nullptr;  // labels + 1 offsets
  const std::int64_t* rows = nullptr;
  const std::uint8_t* positive = nullptr;  // 1: the row has the label
  // Each point's dual variable, beside rows, kept between calls that solve the same points again
  // (a stream's passes, MPI's rounds): read as the start and written back. Null: every call
  // starts its points at zero, which is right only for points the weights have not yet met.
  float* alpha = nullptr;
};

struct DualCdSettings {
  float c = 1.0f;          // the hinge's weight against the L2 penalty
  int max_iterations = 20;
  float tolerance = 0.1f;  // stop once the projected gradients span less than this
  std::uint64_t seed = 0;  // the order each label visits its points in
  // sigma' of CoCoA+ (Ma et al. 2015): when `adders` solvers each solve their own points from the
  // same weights and their changes are added, each must see its own change `adders` times over
  // (in its scores and its steps' curvature) for the sum to stay a descent step. 1: one solver.
  float adders = 1.0f;
};

// Trains every label with points (the weights start where they are; the table's Adagrad sums are
// left alone), labels spread over `threads`; labels whose weights share a slot race on it, as the
// Adagrad epochs do. Returns the mean squared hinge loss over the points, each label's scored with
// the weights it solved for.
double reranker_dual_cd(const CsrFloat& x, const LabelPoints& points, const RerankerWeights& w,
                        const DualCdSettings& settings, int threads);

}  // namespace slide
