// Turns NumPy CSR arrays into views, checking them first (the binding validates before it
// releases the GIL, so bad arrays become ValueError, never a crash).
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "python/bindings.h"

namespace slide::python {

using IndptrArray = py::array_t<std::int64_t, py::array::c_style>;
using IndexArray = py::array_t<std::int32_t, py::array::c_style>;
using FloatArray = py::array_t<float, py::array::c_style>;
using RowArray = py::array_t<std::int64_t, py::array::c_style>;

// `rows` limits the content checks to those rows (nullptr: every row).
CsrFloat features_view(const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data,
                       std::int64_t cols, const RowArray* rows);
CsrIds labels_view(const IndptrArray& indptr, const IndexArray& indices, std::int64_t cols, const RowArray* rows);

}  // namespace slide::python
