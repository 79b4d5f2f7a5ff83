#include "lsh/wta.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/rng.h"
#include "simd/kernels.h"
#include "simd/window_layout.h"

namespace slide {

namespace {
constexpr int kMaxProbes = 64;
}  // namespace

Wta::Wta(const LshConfig& c, int dim, std::uint64_t seed, bool densified)
    : HashFamily(c, dim), bin_size_(c.bin_size), densified_(densified) {
  const std::size_t n = static_cast<std::size_t>(k_) * l_;
  std::vector<std::uint32_t> coords(n * bin_size_);
  Rng rng(seed);
  probe_seed_ = rng.next();
  // Windows are consecutive slices of fresh permutations, so a window never repeats a coordinate
  // and every coordinate is used equally often.
  std::vector<std::uint32_t> perm(dim);
  std::size_t filled = 0;
  while (filled < coords.size()) {
    std::iota(perm.begin(), perm.end(), 0u);
    for (int i = dim - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    for (int start = 0; start + bin_size_ <= dim && filled < coords.size(); start += bin_size_)
      for (int j = 0; j < bin_size_; ++j) coords[filled++] = perm[start + j];
  }
  coords_ = interleave_windows(coords, n, static_cast<std::size_t>(bin_size_), 0u);
}

void Wta::codes(const float* x, std::uint32_t* out, HashScratch&) const {
  const std::uint32_t n = static_cast<std::uint32_t>(k_) * l_;
  // Densified WTA treats exact zeros (ReLU outputs) as missing; plain WTA skips nothing.
  const float skip = densified_ ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  kernels().wta(x, static_cast<std::size_t>(dim_), coords_.data(), n, static_cast<std::size_t>(bin_size_), skip, out);
  bool any_empty = false;
  for (std::uint32_t h = 0; h < n; ++h) any_empty |= (out[h] == kNoWinner);
  if (!any_empty) return;
  // Densification: an empty window borrows the code of the first non-empty window on its probe
  // path. The path depends only on the window index, so equal inputs borrow identically.
  for (std::uint32_t h = 0; h < n; ++h) {
    if (out[h] < static_cast<std::uint32_t>(bin_size_)) continue;
    std::uint32_t code = 0;
    for (int attempt = 1; attempt <= kMaxProbes; ++attempt) {
      std::uint32_t src = static_cast<std::uint32_t>(
          (mix64(probe_seed_ ^ (static_cast<std::uint64_t>(h) << 8) ^ attempt) >> 32) * n >> 32);
      if (out[src] < static_cast<std::uint32_t>(bin_size_)) {
        code = out[src];
        break;
      }
    }
    out[h] = code | 0x80000000u;  // marked as borrowed so later windows never borrow a borrowed code
  }
  for (std::uint32_t h = 0; h < n; ++h) out[h] &= 0x7FFFFFFFu;
}

}  // namespace slide
