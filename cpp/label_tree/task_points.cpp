#include "label_tree/task_points.h"

namespace slide {

namespace {

// Visits each (task, row, positive) of one row of y, given the nodes and labels it reaches.
class RowVisitor {
 public:
  RowVisitor(const TreeView& tree, const std::vector<std::int64_t>& parent, const std::vector<std::int64_t>& leaf_of)
      : tree_(tree), parent_(parent), leaf_of_(leaf_of),
        node_stamp_(static_cast<std::size_t>(tree.nodes), -1), label_stamp_(static_cast<std::size_t>(tree.labels), -1) {}

  template <class Emit>
  void visit(const CsrIds& y, std::int64_t row, Emit emit) {
    reached_.clear();
    for (std::int64_t j = y.indptr[row]; j < y.indptr[row + 1]; ++j) {
      label_stamp_[static_cast<std::size_t>(y.indices[j])] = row;
      for (std::int64_t node = leaf_of_[static_cast<std::size_t>(y.indices[j])];
           node >= 0 && node_stamp_[static_cast<std::size_t>(node)] != row;
           node = parent_[static_cast<std::size_t>(node)]) {
        node_stamp_[static_cast<std::size_t>(node)] = row;
        reached_.push_back(node);
      }
    }
    for (const std::int64_t node : reached_) {
      const std::int64_t left = tree_.children[2 * node];
      if (left >= 0) {
        for (const std::int64_t child : {left, tree_.children[2 * node + 1]})
          emit(child, node_stamp_[static_cast<std::size_t>(child)] == row);
        continue;
      }
      for (std::int64_t at = tree_.leaf_indptr[node]; at < tree_.leaf_indptr[node + 1]; ++at) {
        const std::int64_t label = tree_.leaf_labels[at];
        emit(tree_.nodes + label, label_stamp_[static_cast<std::size_t>(label)] == row);
      }
    }
  }

 private:
  const TreeView& tree_;
  const std::vector<std::int64_t>& parent_;
  const std::vector<std::int64_t>& leaf_of_;
  std::vector<std::int64_t> node_stamp_, label_stamp_;  // the last row that reached each
  std::vector<std::int64_t> reached_;
};

}  // namespace

TaskPoints tree_task_points(const TreeView& tree, const CsrIds& y) {
  std::vector<std::int64_t> parent(static_cast<std::size_t>(tree.nodes), -1);
  for (std::int64_t node = 0; node < tree.nodes; ++node)
    if (tree.children[2 * node] >= 0)
      parent[static_cast<std::size_t>(tree.children[2 * node])] =
          parent[static_cast<std::size_t>(tree.children[2 * node + 1])] = node;
  std::vector<std::int64_t> leaf_of(static_cast<std::size_t>(tree.labels), -1);
  for (std::int64_t node = 0; node < tree.nodes; ++node)
    for (std::int64_t at = tree.leaf_indptr[node]; at < tree.leaf_indptr[node + 1]; ++at)
      leaf_of[static_cast<std::size_t>(tree.leaf_labels[at])] = node;
  TaskPoints out;
  const std::int64_t tasks = tree.nodes + tree.labels;
  out.indptr.assign(static_cast<std::size_t>(tasks + 1), 0);
  RowVisitor visitor(tree, parent, leaf_of);
  for (std::int64_t row = 0; row < y.rows; ++row)
    visitor.visit(y, row, [&](std::int64_t task, bool) { ++out.indptr[static_cast<std::size_t>(task + 1)]; });
  for (std::int64_t t = 0; t < tasks; ++t) out.indptr[static_cast<std::size_t>(t + 1)] += out.indptr[static_cast<std::size_t>(t)];
  const auto pairs = static_cast<std::size_t>(out.indptr.back());
  out.rows.resize(pairs);
  out.positive.resize(pairs);
  std::vector<std::int64_t> next(out.indptr.begin(), out.indptr.end() - 1);
  for (std::int64_t row = 0; row < y.rows; ++row)
    visitor.visit(y, row, [&](std::int64_t task, bool positive) {
      const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(task)]++);
      out.rows[at] = row;
      out.positive[at] = positive ? 1 : 0;
    });
  return out;
}

}  // namespace slide
