// The label tree's classifiers (slide.label_tree): each task's L2-regularised squared hinge over
// its points, solved from zero by the same dual coordinate descent as the re-ranker's
// (rerank/gathered_label.h), and kept exactly, one sparse row of weights per task, instead of in a
// hashed table. A tree's 2 x labels tasks, each over the features of every point that reaches its
// node, collide in a table: on debian-rdeps (57,489 labels) one tree scored 0.210 / 0.095 P@1 /
// P@5 through 2^24 slots and 0.218 / 0.102 through 2^26 (by script). Weights below `threshold` in
// magnitude are dropped, as omikuji and Parabel drop them: most of a node's weights are small.
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"
#include "rerank/dual_cd_hinge.h"

namespace slide {

// One sparse row of weights (feature ids ascending) and a bias per task.
struct SparseClassifiers {
  std::vector<std::int64_t> indptr;  // tasks + 1
  std::vector<std::int32_t> indices;
  std::vector<float> values;
  std::vector<float> bias;
};

// A view over such rows that live elsewhere (NumPy's).
struct SparseClassifiersView {
  const std::int64_t* indptr = nullptr;
  const std::int32_t* indices = nullptr;
  const float* values = nullptr;
  const float* bias = nullptr;
  std::int64_t tasks = 0;
};

// Solves every task with points (`points` per task, as the re-ranker's labels; alpha unused)
// over `threads`, and returns the kept weights and the mean squared hinge loss over the points.
SparseClassifiers sparse_dual_cd(const CsrFloat& x, const LabelPoints& points, std::int64_t tasks,
                                 const DualCdSettings& settings, float threshold, int threads, double* loss);

// out[p] = bias[tasks[p]] + the row rows[p] of x dotted with the task's weights, in any order of
// pairs: each task's weights are spread over a dense vector once for all of its pairs.
void sparse_pair_scores(const CsrFloat& x, const std::int64_t* rows, const std::int32_t* tasks, std::int64_t pairs,
                        const SparseClassifiersView& w, float* out, int threads);

}  // namespace slide
