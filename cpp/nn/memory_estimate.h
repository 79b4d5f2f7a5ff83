// What a network will allocate, computed from its configuration alone, so a configuration that
// cannot fit is refused with a clear error before any allocation (instead of an OOM kill).
#pragma once
#include <cstddef>

#include "nn/network_config.h"

namespace slide {

struct MemoryEstimate {
  std::size_t parameters = 0;  // weights, gradients, optimizer moments, BF16 copies, biases
  std::size_t lsh = 0;         // hash tables, codes, insertion order, update counters
  std::size_t scratch = 0;     // per-thread active-set buffers and the batch workspace
  std::size_t total() const { return parameters + lsh + scratch; }
};

// `batch_size` bounds the batch workspace of a batch-shared or dense output layer.
MemoryEstimate estimate_memory(const NetworkConfig& c, std::size_t batch_size);

}  // namespace slide
