// One label's squared-hinge problem gathered over the features its points use: the dual
// coordinate descent both of the solvers share (the re-ranker's hashed table, rerank/dual_cd_hinge.h,
// and the label tree's exact sparse weights, label_tree/sparse_dual_cd.h). Each keeps the weights its
// own way; here they are one dense vector over the label's features, where a step misses no cache.
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"
#include "rerank/dual_cd_hinge.h"

namespace slide {

// One thread's scratch for one label at a time.
struct GatheredLabel {
  std::vector<float> alpha, diagonal;
  std::vector<float> weights;                  // beside `features`: the solver's weights
  std::vector<std::int64_t> order;
  std::vector<std::int32_t> features, place;  // place[f]: f's index in features, or -1
  std::vector<std::int32_t> local;             // per nonzero of the label's points: its feature's index
  std::vector<std::int64_t> offsets;           // each point's first nonzero in `local`
};

// Lists the features the label's points use (in the order met) and maps each point's nonzeros to
// them; `weights` is left zero over them, for the caller to fill.
void gather_features(const CsrFloat& x, const LabelPoints& points, std::int32_t label, GatheredLabel& l);

// Solves the label from `weights` and `bias` as they are (its points' duals from points.alpha
// when given, written back) and returns its squared hinge loss summed over its points.
double solve_gathered(const CsrFloat& x, const LabelPoints& points, std::int32_t label, const DualCdSettings& s,
                      float& bias, GatheredLabel& l);

// Clears `place` for the next label (the caller has read `features`).
void release_features(GatheredLabel& l);

}  // namespace slide
