// A standalone LSH index over the rows of a matrix, for measuring retrieval quality (the exact
// oracle lives beside it in the tests: true top-k by inner product).
#include <pybind11/stl.h>

#include <memory>

#include "common/aligned_array.h"
#include "common/check.h"
#include "lsh/neuron_index.h"
#include "nn/active_set.h"
#include "python/bindings.h"

namespace slide::python {

namespace {

class LshIndex {
 public:
  LshIndex(const LshConfig& c, const py::array_t<float, py::array::c_style>& w, std::uint64_t seed) {
    SLIDE_REQUIRE(w.ndim() == 2, "weights must be 2-D");
    rows_ = static_cast<std::uint32_t>(w.shape(0));
    dim_ = static_cast<int>(w.shape(1));
    validate(c, dim_, rows_);
    stride_ = padded_stride(dim_);
    weights_.resize(static_cast<std::size_t>(rows_) * stride_);
    for (std::uint32_t r = 0; r < rows_; ++r)
      for (int j = 0; j < dim_; ++j) weights_[r * stride_ + j] = w.at(r, j);
    index_ = std::make_unique<NeuronIndex>(c, rows_, dim_, seed, 1);
    index_->rebuild(weights_.data(), stride_);
  }

  py::array_t<std::uint32_t> buckets(const py::array_t<float, py::array::c_style>& q) const {
    SLIDE_REQUIRE(q.ndim() == 2 && q.shape(1) == dim_, "queries must be (n, " << dim_ << ")");
    const int L = index_->config().l;
    py::array_t<std::uint32_t> out({q.shape(0), static_cast<py::ssize_t>(L)});
    HashScratch s;
    index_->family().prepare(s);
    for (py::ssize_t i = 0; i < q.shape(0); ++i) index_->family().buckets(q.data(i, 0), out.mutable_data(i, 0), s);
    return out;
  }

  std::vector<py::array_t<std::uint32_t>> query(const py::array_t<float, py::array::c_style>& q) const {
    py::array_t<std::uint32_t> b = buckets(q);
    ActiveSetBuilder builder(rows_, index_->config().l);
    Rng rng(1);
    std::vector<std::uint32_t> ids;
    std::vector<py::array_t<std::uint32_t>> out;
    for (py::ssize_t i = 0; i < q.shape(0); ++i) {
      builder.build(index_->tables(), b.data(i, 0), nullptr, 0, NegativePool{}, 0, index_->config().max_active, rng,
                    ids);
      out.emplace_back(static_cast<py::ssize_t>(ids.size()), ids.data());
    }
    return out;
  }

  std::size_t stored() const { return index_->tables().stored(); }

 private:
  std::uint32_t rows_;
  int dim_;
  std::size_t stride_;
  AlignedArray<float> weights_;
  std::unique_ptr<NeuronIndex> index_;
};

}  // namespace

void bind_lsh(py::module_& m) {
  py::class_<LshIndex>(m, "LshIndex")
      .def(py::init<const LshConfig&, const py::array_t<float, py::array::c_style>&, std::uint64_t>(),
           py::arg("config"), py::arg("weights"), py::arg("seed"))
      .def("buckets", &LshIndex::buckets)
      .def("query", &LshIndex::query)
      .def_property_readonly("stored", &LshIndex::stored);
}

}  // namespace slide::python
