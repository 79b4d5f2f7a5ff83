#include "lsh/simhash.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/rng.h"
#include "simd/kernels.h"

namespace slide {

SimHash::SimHash(const LshConfig& c, int dim, std::uint64_t seed) : HashFamily(c, dim) {
  const int per_projection = std::max(1, static_cast<int>(std::lround(c.simhash_density * dim)));
  projections_ = static_cast<std::size_t>(k_) * l_;
  matrix_.assign(static_cast<std::size_t>(dim) * projections_, 0.0f);
  Rng rng(seed);
  std::vector<std::uint32_t> perm(dim);
  std::iota(perm.begin(), perm.end(), 0u);
  for (std::size_t h = 0; h < projections_; ++h)
    for (int i = 0; i < per_projection; ++i) {  // partial Fisher-Yates: distinct coordinates
      std::uint32_t j = i + rng.below(static_cast<std::uint32_t>(dim - i));
      std::swap(perm[i], perm[j]);
      matrix_[static_cast<std::size_t>(perm[i]) * projections_ + h] = (rng.next() & 1) ? 1.0f : -1.0f;
    }
}

void SimHash::codes(const float* x, std::uint32_t* out, HashScratch& scratch) const {
  float* sums = scratch.values.data();
  kernels().gemm(1, projections_, static_cast<std::size_t>(dim_), x, static_cast<std::size_t>(dim_), matrix_.data(),
                 projections_, sums, projections_, false);
  for (std::size_t h = 0; h < projections_; ++h) out[h] = sums[h] > 0.0f ? 1u : 0u;
}

}  // namespace slide
