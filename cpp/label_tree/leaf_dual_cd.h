// The labels of one leaf of the label tree solved together. Parabel's rule trains every label of a
// leaf on the leaf's points, so their squared-hinge problems share the points and the features,
// and one pass over the points can step every label's dual at once: the weights are one dense
// block of [features x labels], a point's scores for all of the labels are its nonzeros' rows of
// the block added up, and a step adds the labels' changes back along the same rows (the dispatched
// axpy, simd/kernels.h). Solved one by one (rerank/gathered_label.h), each label reads every
// point's features again. The labels' solve at 2 threads, one by one -> together: debian-rdeps
// (leaves of 100 labels over about 75 points) 1.53 -> 0.61 s, debian-deps (leaves of 32) 1.42 ->
// 0.92 s; slide with no flags on debian-rdeps, seeds 0-2, test P@1 / P@5 0.2264 / 0.1081 -> 0.2268
// / 0.1082, the work after the epochs 4.7 -> 3.6 s. At Amazon-670K's catalogue shape (leaves of 32,
// about 3.7 points a label) it gains nothing: 153.9 s against 149.2 s (benches/label_tree_scale.py).
//
// Each label is liblinear's problem and stopping rule, as solve_gathered's: a pass visits the
// points in a random order, and a label has converged once its projected gradients over a pass
// span at most the tolerance. Passes go on while any label has not (at most max_iterations), and
// the points are never shrunk: a point's scores cost the same for one label or a hundred.
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"
#include "rerank/dual_cd_hinge.h"
#include "rerank/gathered_label.h"

namespace slide {

// One thread's scratch for one leaf at a time.
struct LeafBlock {
  std::vector<float> weights;  // [gathered feature][label]
  std::vector<float> bias;     // [label]
  std::vector<float> alpha, sign;  // [point][label]; sign +1 where the point has the label, else -1
  std::vector<float> diagonal;     // [point]
  std::vector<float> scores, steps, highest, lowest;  // [label]
  std::vector<std::int64_t> order;
};

// Solves the `count` tasks tasks[0..count), which share their points (the same rows in the same
// order), from zero, over the features gathered in `gathered` for tasks[0] (gather_features).
// Leaves task j's weights in block.weights[f * count + j] and block.bias[j]; returns each task's
// squared hinge loss summed over its points in losses[j]. `settings.adders` must be 1 and
// points.alpha null: the tree solves each task once, from zero.
void solve_leaf(const CsrFloat& x, const LabelPoints& points, const std::int64_t* tasks, std::int64_t count,
                const DualCdSettings& settings, const GatheredLabel& gathered, LeafBlock& block, double* losses);

}  // namespace slide
