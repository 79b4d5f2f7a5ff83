// The extension module slide._core is assembled from one file per concern.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace slide::python {

namespace py = pybind11;

void bind_config(py::module_& m);
void bind_network(py::module_& m);
void bind_output_layer(py::module_& m);
void bind_simd(py::module_& m);
void bind_lsh(py::module_& m);
void bind_data(py::module_& m);
void bind_skipgram(py::module_& m);
void bind_testing(py::module_& m);
void bind_neighbours(py::module_& m);
void bind_collective(py::module_& m);
void bind_reranker(py::module_& m);
void bind_label_tree(py::module_& m);
void bind_sparse_step(py::module_& m);

}  // namespace slide::python
