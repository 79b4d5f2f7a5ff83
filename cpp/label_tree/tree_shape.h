// The label tree's shape (slide.label_tree.clustering): the labels split in two, recursively, by
// balanced spherical 2-means over their PIFA vectors (Parabel), until a node holds at most
// `leaf_size`. Nodes are numbered breadth first, so a node's children come after it; the nodes of
// one level are split in parallel, each from its own seed, so the shape does not depend on the
// thread count. In Python the splits took 1.1 s of debian-rdeps' 57,489 labels (2,047 nodes).
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"

namespace slide {

struct TreeShapeArrays {
  std::vector<std::int64_t> children;     // 2 per node: -1 -1 for a leaf
  std::vector<std::int64_t> leaf_indptr;  // nodes + 1
  std::vector<std::int64_t> leaf_labels;  // every label once, leaf by leaf
};

struct TwoMeansSettings {
  int leaf_size = 100;
  int max_iterations = 20;
  float tolerance = 1e-4f;  // stop once an iteration improves the objective by less than this fraction
  std::uint64_t seed = 0;
};

// `vectors`: one unit row per label (a label without points may be a zero row).
TreeShapeArrays build_tree_shape(const CsrFloat& vectors, const TwoMeansSettings& settings, int threads);

}  // namespace slide
