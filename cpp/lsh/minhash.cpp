#include "lsh/minhash.h"

#include <algorithm>

#include "common/rng.h"

namespace slide {

namespace {
constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;
constexpr int kMaxProbes = 256;
}  // namespace

DensifiedMinHash::DensifiedMinHash(const LshConfig& c, int dim, std::uint64_t seed)
    : HashFamily(c, dim), topk_(c.minhash_topk > 0 ? c.minhash_topk : std::max(1, dim / 4)), seed_(seed) {}

void DensifiedMinHash::codes(const float* x, std::uint32_t* out, HashScratch& s) const {
  std::uint32_t* ids = s.ids.data();
  int count = 0;
  for (int i = 0; i < dim_; ++i)
    if (x[i] > 0.0f) ids[count++] = static_cast<std::uint32_t>(i);
  if (count > topk_) {
    std::nth_element(ids, ids + topk_, ids + count,
                     [x](std::uint32_t a, std::uint32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
    count = topk_;
  }
  const std::uint32_t bins = static_cast<std::uint32_t>(k_) * l_;
  const std::uint32_t mask = (1u << code_bits_) - 1u;
  if (count == 0) {
    std::fill(out, out + bins, 0u);
    return;
  }
  // One permutation: each element's hash picks its bin (high half) and its rank (low half); a
  // bin keeps its smallest rank. The key carries the winner's identity so codes can be derived.
  std::uint32_t* keys = s.keys.data();
  std::fill(keys, keys + bins, kEmpty);
  for (int e = 0; e < count; ++e) {
    std::uint64_t hv = mix64(seed_ ^ (static_cast<std::uint64_t>(ids[e]) * 0x9E3779B97F4A7C15ULL));
    std::uint32_t bin = static_cast<std::uint32_t>(((hv >> 32) * bins) >> 32);
    std::uint32_t rank = static_cast<std::uint32_t>(hv) & 0xFFFFF000u;
    std::uint32_t key = std::min(rank | (ids[e] & 0xFFFu), kEmpty - 1);
    keys[bin] = std::min(keys[bin], key);
  }
  // Optimal densification: an empty bin takes the key of the first non-empty bin on its own
  // probe sequence (a function of the bin alone, so similar sets borrow alike).
  for (std::uint32_t b = 0; b < bins; ++b) {
    std::uint32_t key = keys[b];
    for (int attempt = 1; key == kEmpty && attempt <= kMaxProbes; ++attempt) {
      std::uint64_t r = mix64(seed_ + 0xD1B54A32D192ED03ULL * (static_cast<std::uint64_t>(b) * (kMaxProbes + 1) + attempt));
      key = keys[static_cast<std::uint32_t>(((r >> 32) * bins) >> 32)];
    }
    if (key == kEmpty) key = 0;
    // Salt by the destination bin so a borrowed winner still gives bin-specific codes.
    out[b] = static_cast<std::uint32_t>(mix64((static_cast<std::uint64_t>(key) << 20) ^ b)) & mask;
  }
}

}  // namespace slide
