// Hands a vector to NumPy without copying: the array owns it through a capsule.
#pragma once
#include <utility>
#include <vector>

#include "python/bindings.h"

namespace slide::python {

template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_when_done);
}

}  // namespace slide::python
