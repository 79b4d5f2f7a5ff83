// The re-ranker's hashed weights (rerank/shortlist_reranker.h): where each (label, feature) pair's
// weight lives in the table, and a (row, label) pair's score. Shared by the re-ranker's solvers.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "rerank/shortlist_reranker.h"

namespace slide {

struct HashedSlot {
  std::int64_t index;
  float sign;
};

// A 64-bit mix of (label, feature): the low bits pick the slot, the top bit the sign, so
// colliding pairs cancel in expectation instead of adding up.
inline HashedSlot slot_of(std::int32_t label, std::int32_t feature, std::int64_t mask) {
  std::uint64_t h = static_cast<std::uint64_t>(static_cast<std::uint32_t>(label)) * 0x9E3779B97F4A7C15ull ^
                    static_cast<std::uint64_t>(static_cast<std::uint32_t>(feature)) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return {static_cast<std::int64_t>(h & static_cast<std::uint64_t>(mask)), (h >> 63) ? -1.0f : 1.0f};
}

inline float score_of(const CsrFloat& x, std::int64_t row, std::int32_t label, const RerankerWeights& w) {
  const std::int64_t mask = w.size - 1;
  float s = w.bias[2 * label];  // (bias, sum of squared gradients)
  for (std::int64_t i = x.indptr[row]; i < x.indptr[row + 1]; ++i) {
    const HashedSlot slot = slot_of(label, x.indices[i], mask);
    s += x.data[i] * slot.sign * w.slots[2 * slot.index];
  }
  return s;
}

}  // namespace slide
