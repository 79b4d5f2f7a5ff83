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
  int per_projection_;
  std::vector<std::uint32_t> coords_;  // K*L x per_projection_
  std::vector<float> signs_;
};

}  // namespace slide
