#include "train/external_output.h"

#include <algorithm>
#include <cstring>

#include "common/aligned_array.h"
#include "common/check.h"
#include "train/output_batch.h"

namespace slide {

BatchStats external_output_gradients(Network& net, const float* hidden, std::size_t rows, const CsrIds& y,
                                     float* hidden_delta) {
  SLIDE_REQUIRE(!net.collective(), "an output layer trained from outside runs in one process");
  BatchWorkspace& w = net.batch_workspace();
  const std::size_t K = net.layers.back().params.cols, ldh = padded_stride(K);
  w.rows.clear();
  for (std::size_t r = 0; r < rows; ++r)  // a row without labels has nothing to learn
    if (y.indptr[r + 1] > y.indptr[r]) w.rows.push_back(static_cast<std::int64_t>(r));
  const std::size_t B = w.rows.size();
  w.hidden.assign(B * ldh, 0.0f);
  w.label_ptr.assign(1, 0);
  w.labels.clear();
  for (std::size_t b = 0; b < B; ++b) {
    const std::int64_t r = w.rows[b];
    std::memcpy(&w.hidden[b * ldh], hidden + static_cast<std::size_t>(r) * K, K * sizeof(float));
    for (std::int64_t q = y.indptr[r]; q < y.indptr[r + 1]; ++q)
      w.labels.push_back(static_cast<std::uint32_t>(y.indices[q]));
    w.label_ptr.push_back(static_cast<std::int64_t>(w.labels.size()));
  }
  const BatchStats stats = output_batch_gradients(net, B);
  std::fill(hidden_delta, hidden_delta + rows * K, 0.0f);
  if (stats.samples)
    for (std::size_t b = 0; b < B; ++b)
      std::memcpy(hidden_delta + static_cast<std::size_t>(w.rows[b]) * K, &w.hidden_delta[b * ldh], K * sizeof(float));
  return stats;
}

}  // namespace slide
