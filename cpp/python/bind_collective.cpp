// The engine's Collective (distributed/collective.h) over a Python object, which slide.distributed
// implements with mpi4py. Buffers cross as NumPy views, not copies; the engine calls between its
// parallel regions, from the thread that released the GIL, so each call takes the GIL back.
#include <cstring>
#include <memory>

#include "distributed/collective.h"
#include "nn/network.h"
#include "python/bindings.h"

#include <pybind11/stl.h>

namespace slide::python {

namespace {

template <class T>
py::array_t<T> view_of(T* data, std::size_t n) {
  static T empty{};  // an empty std::vector's data() may be null, which a capsule cannot hold
  if (data == nullptr) data = &empty;
  // A capsule that owns nothing: the array borrows the engine's buffer for the length of one call.
  return py::array_t<T>({static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(T))}, data,
                        py::capsule(data, [](void*) {}));
}

class PyCollective final : public Collective {
 public:
  explicit PyCollective(py::object impl)
      : impl_(std::move(impl)), rank_(impl_.attr("rank").cast<int>()), size_(impl_.attr("size").cast<int>()) {}
  ~PyCollective() override {
    py::gil_scoped_acquire gil;
    impl_ = py::object();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(float* data, std::size_t n) override { call("sum", data, n); }
  void sum(double* data, std::size_t n) override { call("sum", data, n); }
  void max(float* data, std::size_t n) override { call("max", data, n); }

  void sum_scatter(const float* data, const std::vector<std::size_t>& counts, float* out) override {
    py::gil_scoped_acquire gil;
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    impl_.attr("sum_scatter")(view_of(const_cast<float*>(data), total), counts,
                              view_of(out, counts[static_cast<std::size_t>(rank_)]));
  }

  void gather(const void* data, std::size_t bytes, std::vector<std::uint8_t>& out,
              std::vector<std::size_t>& counts) override {
    py::gil_scoped_acquire gil;
    auto* p = static_cast<std::uint8_t*>(const_cast<void*>(data));
    py::tuple got = impl_.attr("gather")(view_of(p, bytes));
    counts = got[1].cast<std::vector<std::size_t>>();
    auto all = got[0].cast<py::array_t<std::uint8_t, py::array::c_style>>();
    out.resize(static_cast<std::size_t>(all.size()));
    if (all.size()) std::memcpy(out.data(), all.data(), out.size());
  }

 private:
  template <class T>
  void call(const char* name, T* data, std::size_t n) {
    py::gil_scoped_acquire gil;
    impl_.attr(name)(view_of(data, n));
  }

  py::object impl_;
  int rank_, size_;
};

}  // namespace

void bind_collective(py::module_& m) {
  m.def(
      "set_collective",
      [](Network& net, py::object impl) {
        net.set_collective(impl.is_none() ? nullptr : std::make_shared<PyCollective>(impl));
      },
      py::arg("network"), py::arg("collective"),
      "Train `network` with the other ranks through `collective` (rank, size, sum, max, sum_scatter, gather), "
      "or alone (None).");
}

}  // namespace slide::python
