// The label tree (slide.label_tree): its shape, its classifiers' points, the classifiers solved
// into exact sparse rows, and their scores of (row, task) pairs. Every array, including weights read from a model file, is checked before
// the GIL is released.
#include <cmath>

#include "common/check.h"
#include "python/bindings.h"
#include "python/csr_arrays.h"
#include "label_tree/sparse_dual_cd.h"
#include "label_tree/task_points.h"
#include "label_tree/tree_shape.h"

namespace slide::python {

namespace {

using TaskArray = py::array_t<std::int32_t, py::array::c_style>;

template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_when_done);
}

void check_rows(const RowArray& rows, std::int64_t count) {
  const std::int64_t* r = rows.data();
  for (std::int64_t p = 0; p < rows.size(); ++p)
    SLIDE_REQUIRE(r[p] >= 0 && r[p] < count, "row " << r[p] << " lies outside [0, " << count << ")");
}

// Weights [tasks] of sparse rows over `n_features`: indptr from 0 to nnz, never decreasing,
// feature ids in range and ascending within a row (as the solver writes them), every value finite.
SparseClassifiersView classifiers_view(const IndptrArray& indptr, const IndexArray& indices, const FloatArray& values,
                                       const FloatArray& bias, std::int64_t n_features) {
  SLIDE_REQUIRE(indptr.ndim() == 1 && indices.ndim() == 1 && values.ndim() == 1 && bias.ndim() == 1,
                "the tree's weights must be 1-D arrays");
  const std::int64_t tasks = bias.size();
  SLIDE_REQUIRE(indptr.size() == tasks + 1, "the tree's weights hold " << indptr.size() - 1 << " rows for "
                                                                        << tasks << " biases");
  SLIDE_REQUIRE(indices.size() == values.size(), "the tree's weights hold " << indices.size() << " feature ids for "
                                                                           << values.size() << " values");
  const std::int64_t* p = indptr.data();
  SLIDE_REQUIRE(p[0] == 0 && p[tasks] == indices.size(), "the tree's weight rows must run from 0 to "
                                                             << indices.size());
  for (std::int64_t t = 0; t < tasks; ++t)
    SLIDE_REQUIRE(p[t] <= p[t + 1], "the tree's weight rows decrease at row " << t);
  const std::int32_t* ids = indices.data();
  for (std::int64_t t = 0; t < tasks; ++t)
    for (std::int64_t j = p[t] + 1; j < p[t + 1]; ++j)
      SLIDE_REQUIRE(ids[j - 1] < ids[j], "the tree's weight row " << t << " names its features out of ascending order");
  const float* v = values.data();
  for (std::int64_t j = 0; j < indices.size(); ++j) {
    SLIDE_REQUIRE(ids[j] >= 0 && ids[j] < n_features,
                  "the tree's weights name feature " << ids[j] << ", outside [0, " << n_features << ")");
    SLIDE_REQUIRE(std::isfinite(v[j]), "the tree's weights hold a NaN or inf");
  }
  for (std::int64_t t = 0; t < tasks; ++t) SLIDE_REQUIRE(std::isfinite(bias.data()[t]), "the tree's biases hold a NaN or inf");
  return {p, ids, v, bias.data(), tasks};
}

// A shape's arrays, checked where the engine indexes by them: node ids within the nodes, label
// ids within the labels, leaf offsets within leaf_labels.
TreeView tree_view(const IndptrArray& children, const IndptrArray& leaf_indptr, const IndptrArray& leaf_labels,
                   std::int64_t labels) {
  SLIDE_REQUIRE(children.ndim() == 1 && children.size() >= 2 && children.size() % 2 == 0,
                "the tree's children must hold two ids a node");
  const std::int64_t nodes = children.size() / 2;
  SLIDE_REQUIRE(leaf_indptr.ndim() == 1 && leaf_indptr.size() == nodes + 1, "leaf_indptr must hold nodes + 1 offsets");
  const std::int64_t* c = children.data();
  for (std::int64_t i = 0; i < children.size(); ++i)
    SLIDE_REQUIRE(c[i] >= -1 && c[i] < nodes, "the tree names node " << c[i] << ", outside [0, " << nodes << ")");
  const std::int64_t* p = leaf_indptr.data();
  SLIDE_REQUIRE(p[0] == 0 && p[nodes] == leaf_labels.size(), "leaf_indptr must run from 0 to " << leaf_labels.size());
  for (std::int64_t n = 0; n < nodes; ++n) SLIDE_REQUIRE(p[n] <= p[n + 1], "leaf_indptr decreases at node " << n);
  const std::int64_t* l = leaf_labels.data();
  for (std::int64_t i = 0; i < leaf_labels.size(); ++i)
    SLIDE_REQUIRE(l[i] >= 0 && l[i] < labels, "the tree names label " << l[i] << ", outside [0, " << labels << ")");
  return {c, p, l, nodes, labels};
}

}  // namespace

void bind_label_tree(py::module_& m) {
  m.def(
      "tree_shape",
      [](const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data, std::int64_t n_features,
         int leaf_size, int max_iterations, float tolerance, std::uint64_t seed, int threads) {
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        SLIDE_REQUIRE(leaf_size >= 1, "leaf_size must be at least 1, got " << leaf_size);
        SLIDE_REQUIRE(max_iterations >= 1, "max_iterations must be at least 1, got " << max_iterations);
        SLIDE_REQUIRE(tolerance >= 0.0f && std::isfinite(tolerance), "tolerance must be >= 0, got " << tolerance);
        const CsrFloat v = features_view(indptr, indices, data, n_features, nullptr);
        SLIDE_REQUIRE(v.rows >= 1, "the tree needs at least one label");
        const TwoMeansSettings settings{leaf_size, max_iterations, tolerance, seed};
        TreeShapeArrays shape;
        {
          py::gil_scoped_release release;
          shape = build_tree_shape(v, settings, threads);
        }
        return py::make_tuple(to_numpy(std::move(shape.children)), to_numpy(std::move(shape.leaf_indptr)),
                              to_numpy(std::move(shape.leaf_labels)));
      },
      py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n_features"), py::arg("leaf_size"),
      py::arg("max_iterations"), py::arg("tolerance"), py::arg("seed"), py::arg("threads"),
      "The label tree's shape from one vector per label: (children [2 x nodes], leaf_indptr, leaf_labels).");
  m.def(
      "tree_task_points",
      [](const IndptrArray& children, const IndptrArray& leaf_indptr, const IndptrArray& leaf_labels,
         const IndptrArray& y_indptr, const IndexArray& y_indices, std::int64_t n_labels) {
        const TreeView tree = tree_view(children, leaf_indptr, leaf_labels, n_labels);
        const CsrIds y = labels_view(y_indptr, y_indices, n_labels, nullptr);
        TaskPoints points;
        {
          py::gil_scoped_release release;
          points = tree_task_points(tree, y);
        }
        return py::make_tuple(to_numpy(std::move(points.indptr)), to_numpy(std::move(points.rows)),
                              to_numpy(std::move(points.positive)));
      },
      py::arg("children"), py::arg("leaf_indptr"), py::arg("leaf_labels"), py::arg("y_indptr"), py::arg("y_indices"),
      py::arg("n_labels"), "Each of the tree's tasks' points: (indptr, rows, positive).");
  m.def(
      "sparse_dual_cd",
      [](const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data, std::int64_t n_features,
         const IndptrArray& task_indptr, const RowArray& rows, const py::array_t<std::uint8_t, py::array::c_style>& positive,
         float c, int max_iterations, float tolerance, std::uint64_t seed, float threshold, int threads) {
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        SLIDE_REQUIRE(c > 0.0f && std::isfinite(c), "C must be positive, got " << c);
        SLIDE_REQUIRE(max_iterations >= 1, "max_iterations must be at least 1, got " << max_iterations);
        SLIDE_REQUIRE(tolerance >= 0.0f && std::isfinite(tolerance), "tolerance must be >= 0, got " << tolerance);
        SLIDE_REQUIRE(threshold >= 0.0f && std::isfinite(threshold), "threshold must be >= 0, got " << threshold);
        const CsrFloat x = features_view(indptr, indices, data, n_features, nullptr);
        SLIDE_REQUIRE(task_indptr.ndim() == 1 && task_indptr.size() >= 1, "task_indptr must be 1-D, tasks + 1 long");
        const std::int64_t tasks = task_indptr.size() - 1;
        SLIDE_REQUIRE(rows.ndim() == 1 && positive.ndim() == 1 && rows.size() == positive.size(),
                      "rows and positive must be 1-D and of one length");
        const std::int64_t* offsets = task_indptr.data();
        SLIDE_REQUIRE(offsets[0] == 0 && offsets[tasks] == rows.size(),
                      "task_indptr must run from 0 to the number of rows (" << rows.size() << ")");
        for (std::int64_t t = 0; t < tasks; ++t)
          SLIDE_REQUIRE(offsets[t] <= offsets[t + 1], "task_indptr decreases at task " << t);
        check_rows(rows, x.rows);
        const LabelPoints points{offsets, rows.data(), positive.data(), nullptr};
        const DualCdSettings settings{c, max_iterations, tolerance, seed, 1.0f};
        double loss = 0.0;
        SparseClassifiers solved;
        {
          py::gil_scoped_release release;
          solved = sparse_dual_cd(x, points, tasks, settings, threshold, threads, &loss);
        }
        return py::make_tuple(to_numpy(std::move(solved.indptr)), to_numpy(std::move(solved.indices)),
                              to_numpy(std::move(solved.values)), to_numpy(std::move(solved.bias)), loss);
      },
      py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n_features"), py::arg("task_indptr"),
      py::arg("rows"), py::arg("positive"), py::arg("c"), py::arg("max_iterations"), py::arg("tolerance"),
      py::arg("seed"), py::arg("threshold"), py::arg("threads"),
      "Each task's squared hinge over its points from zero, kept as sparse rows: (indptr, indices, values, bias, "
      "mean loss).");
  m.def(
      "sparse_pair_scores",
      [](const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data, std::int64_t n_features,
         const RowArray& rows, const TaskArray& tasks, const IndptrArray& w_indptr, const IndexArray& w_indices,
         const FloatArray& w_values, const FloatArray& bias, int threads) {
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        const CsrFloat x = features_view(indptr, indices, data, n_features, nullptr);
        const SparseClassifiersView w = classifiers_view(w_indptr, w_indices, w_values, bias, n_features);
        SLIDE_REQUIRE(rows.ndim() == 1 && tasks.ndim() == 1 && rows.size() == tasks.size(),
                      "rows and tasks must be 1-D and of one length");
        check_rows(rows, x.rows);
        const std::int32_t* t = tasks.data();
        for (std::int64_t p = 0; p < tasks.size(); ++p)
          SLIDE_REQUIRE(t[p] >= 0 && t[p] < w.tasks, "task " << t[p] << " lies outside [0, " << w.tasks << ")");
        py::array_t<float> out(rows.size());
        float* o = out.mutable_data();
        {
          py::gil_scoped_release release;
          sparse_pair_scores(x, rows.data(), t, rows.size(), w, o, threads);
        }
        return out;
      },
      py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n_features"), py::arg("rows"),
      py::arg("tasks"), py::arg("w_indptr"), py::arg("w_indices"), py::arg("w_values"), py::arg("bias"),
      py::arg("threads"), "Each (row of x, task) pair's score through the tasks' sparse weights.");
}

}  // namespace slide::python
