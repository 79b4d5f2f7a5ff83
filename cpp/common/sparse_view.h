// Non-owning CSR views over arrays that live in NumPy (features and labels).
#pragma once
#include <cstdint>

namespace slide {

struct CsrFloat {
  const std::int64_t* indptr = nullptr;
  const std::int32_t* indices = nullptr;
  const float* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

struct CsrIds {
  const std::int64_t* indptr = nullptr;
  const std::int32_t* indices = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// One sample's sparse input and its labels.
struct SampleView {
  const std::int32_t* feature_ids;
  const float* feature_values;
  std::int32_t num_features;
  const std::int32_t* labels;
  std::int32_t num_labels;
  // Keys per-sample randomness (input dropout). Training passes the sample's place in its batch,
  // so a draw depends on what a sample is trained with, never on where its data lies in memory
  // (a streamed shard and the same data loaded whole train identically).
  std::int64_t key = -1;
};

inline SampleView sample_at(const CsrFloat& x, const CsrIds* y, std::int64_t row, std::int64_t key = -1) {
  SampleView s;
  s.feature_ids = x.indices + x.indptr[row];
  s.feature_values = x.data + x.indptr[row];
  s.num_features = static_cast<std::int32_t>(x.indptr[row + 1] - x.indptr[row]);
  if (y) {
    s.labels = y->indices + y->indptr[row];
    s.num_labels = static_cast<std::int32_t>(y->indptr[row + 1] - y->indptr[row]);
  } else {
    s.labels = nullptr;
    s.num_labels = 0;
  }
  s.key = key < 0 ? row : key;
  return s;
}

}  // namespace slide
