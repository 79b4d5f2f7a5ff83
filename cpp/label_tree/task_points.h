// Which training points each of the label tree's classifiers learns from (Parabel's; see
// slide.label_tree.node_points): a node's, the points that reach its parent (a label below it),
// positive where the point has a label below the node; a label's, the points that reach its leaf,
// positive where the point has the label. Tasks are numbered nodes first (the root's has no
// points), then labels; each task's rows ascending. Counted, then filled, in two passes over the
// rows: the Python version took 0.9-1.1 s of debian-rdeps' and debian-deps-by-source's 5-13 M pairs.
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"

namespace slide {

struct TreeView {
  const std::int64_t* children = nullptr;     // 2 per node, -1 -1 for a leaf
  const std::int64_t* leaf_indptr = nullptr;  // nodes + 1
  const std::int64_t* leaf_labels = nullptr;
  std::int64_t nodes = 0;
  std::int64_t labels = 0;
};

struct TaskPoints {
  std::vector<std::int64_t> indptr;  // nodes + labels + 1
  std::vector<std::int64_t> rows;
  std::vector<std::uint8_t> positive;
};

TaskPoints tree_task_points(const TreeView& tree, const CsrIds& y);

}  // namespace slide
