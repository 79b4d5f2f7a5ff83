// SimHash with sparse random projections: each code bit is the sign of a +-1 projection onto a
// random subset of coordinates (density ~1/3 as in SLIDE), approximating angular similarity.
#pragma once
#include <cstdint>
#include <vector>

#include "lsh/hash_family.h"

namespace slide {

class SimHash final : public HashFamily {
 public:
  SimHash(const LshConfig& c, int dim, std::uint64_t seed);

 protected:
  void codes(const float* x, std::uint32_t* codes, HashScratch& scratch) const override;

 private:
  // The K*L sparse +-1 projections as a dense dim x K*L matrix (zeros elsewhere): one GEMM row per
  // vector. Each sum runs over the coordinates in ascending order and every product is exact, so
  // all SIMD levels give identical bits.
  std::size_t projections_;
  std::vector<float> matrix_;
};

}  // namespace slide
