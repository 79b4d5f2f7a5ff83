// Per-thread scratch of one fully connected layer: its activations, and for a sampled layer the
// hash buffers and the active-set builder. Allocated once per thread (fastText's State).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "lsh/hash_family.h"
#include "nn/activations.h"
#include "nn/active_set.h"
#include "simd/kernels.h"

namespace slide {

struct LayerScratch {
  Activations out;
  std::unique_ptr<ActiveSetBuilder> builder;
  HashScratch hash;
  std::vector<std::uint32_t> buckets;
  std::vector<float> dense_input;  // a sparse input scattered to full width for hashing
  std::vector<bf16> input_bf16;    // the dense input rounded to BF16 (precision="bf16")
  std::vector<std::uint32_t> touched;
  std::int64_t retrieved = 0;      // candidates the tables returned (statistics)
};

}  // namespace slide
