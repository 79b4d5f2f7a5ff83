#include "python/csr_arrays.h"

#include <cmath>

#include "common/check.h"

namespace slide::python {

namespace {

template <class Visit>
void for_rows(std::int64_t n_rows, const RowArray* rows, Visit visit) {
  if (!rows) {
    for (std::int64_t r = 0; r < n_rows; ++r) visit(r);
    return;
  }
  const std::int64_t* p = rows->data();
  for (py::ssize_t i = 0; i < rows->size(); ++i) {
    SLIDE_REQUIRE(p[i] >= 0 && p[i] < n_rows, "row index " << p[i] << " out of range [0, " << n_rows << ")");
    visit(p[i]);
  }
}

std::int64_t check_indptr(const char* what, const IndptrArray& indptr, py::ssize_t nnz) {
  SLIDE_REQUIRE(indptr.ndim() == 1 && indptr.size() >= 1, what << ": indptr must be a 1-D array of length rows + 1");
  const std::int64_t rows = indptr.size() - 1;
  const std::int64_t* p = indptr.data();
  SLIDE_REQUIRE(p[0] == 0 && p[rows] == nnz, what << ": indptr must start at 0 and end at nnz (" << nnz << ")");
  return rows;
}

}  // namespace

CsrFloat features_view(const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data,
                       std::int64_t cols, const RowArray* rows) {
  SLIDE_REQUIRE(indices.size() == data.size(), "X: indices and data differ in length");
  CsrFloat v;
  v.rows = check_indptr("X", indptr, indices.size());
  v.cols = cols;
  v.indptr = indptr.data();
  v.indices = indices.data();
  v.data = data.data();
  for_rows(v.rows, rows, [&](std::int64_t r) {
    const std::int64_t b = v.indptr[r], e = v.indptr[r + 1];
    SLIDE_REQUIRE(0 <= b && b <= e && e <= static_cast<std::int64_t>(indices.size()),
                  "X: indptr is not monotone at row " << r);
    for (std::int64_t i = b; i < e; ++i) {
      SLIDE_REQUIRE(v.indices[i] >= 0 && v.indices[i] < cols,
                    "X: row " << r << " has feature id " << v.indices[i] << ", expected [0, " << cols << ")");
      SLIDE_REQUIRE(std::isfinite(v.data[i]), "X: row " << r << " has a non-finite value");
    }
  });
  return v;
}

CsrIds labels_view(const IndptrArray& indptr, const IndexArray& indices, std::int64_t cols, const RowArray* rows) {
  CsrIds v;
  v.rows = check_indptr("Y", indptr, indices.size());
  v.cols = cols;
  v.indptr = indptr.data();
  v.indices = indices.data();
  for_rows(v.rows, rows, [&](std::int64_t r) {
    const std::int64_t b = v.indptr[r], e = v.indptr[r + 1];
    SLIDE_REQUIRE(0 <= b && b <= e && e <= static_cast<std::int64_t>(indices.size()),
                  "Y: indptr is not monotone at row " << r);
    for (std::int64_t i = b; i < e; ++i) {
      SLIDE_REQUIRE(v.indices[i] >= 0 && v.indices[i] < cols,
                    "Y: row " << r << " has label " << v.indices[i] << ", expected [0, " << cols << ")");
      SLIDE_REQUIRE(i == b || v.indices[i] > v.indices[i - 1], "Y: row " << r << " labels must be sorted and unique");
    }
  });
  return v;
}

}  // namespace slide::python
