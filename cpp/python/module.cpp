#include "python/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "slide's C++ engine. Use the `slide` package; this module is its thin binding.";
  m.attr("__version__") = SLIDE_VERSION;
  slide::python::bind_config(m);
  slide::python::bind_simd(m);
  slide::python::bind_lsh(m);
  slide::python::bind_network(m);
  slide::python::bind_output_layer(m);
  slide::python::bind_data(m);
  slide::python::bind_skipgram(m);
  slide::python::bind_testing(m);
  slide::python::bind_neighbours(m);
  slide::python::bind_collective(m);
  slide::python::bind_reranker(m);
  slide::python::bind_label_tree(m);
  slide::python::bind_sparse_step(m);
}
