#include "lsh/simhash.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/rng.h"

namespace slide {

SimHash::SimHash(const LshConfig& c, int dim, std::uint64_t seed) : HashFamily(c, dim) {
  per_projection_ = std::max(1, static_cast<int>(std::lround(c.simhash_density * dim)));
  const std::size_t n = static_cast<std::size_t>(k_) * l_;
  coords_.resize(n * per_projection_);
  signs_.resize(n * per_projection_);
  Rng rng(seed);
  std::vector<std::uint32_t> perm(dim);
  std::iota(perm.begin(), perm.end(), 0u);
  for (std::size_t h = 0; h < n; ++h) {
    for (int i = 0; i < per_projection_; ++i) {  // partial Fisher-Yates: distinct coordinates
      std::uint32_t j = i + rng.below(static_cast<std::uint32_t>(dim - i));
      std::swap(perm[i], perm[j]);
      coords_[h * per_projection_ + i] = perm[i];
      signs_[h * per_projection_ + i] = (rng.next() & 1) ? 1.0f : -1.0f;
    }
    std::sort(coords_.begin() + h * per_projection_, coords_.begin() + (h + 1) * per_projection_);
  }
}

void SimHash::codes(const float* x, std::uint32_t* out, HashScratch&) const {
  const std::size_t n = static_cast<std::size_t>(k_) * l_;
  const std::uint32_t* c = coords_.data();
  const float* s = signs_.data();
  for (std::size_t h = 0; h < n; ++h, c += per_projection_, s += per_projection_) {
    float acc = 0.0f;
    for (int i = 0; i < per_projection_; ++i) acc += s[i] * x[c[i]];
    out[h] = acc > 0.0f ? 1u : 0u;
  }
}

}  // namespace slide
