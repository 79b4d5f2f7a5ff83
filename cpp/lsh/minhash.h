// Densified one-permutation minhash over the set of a vector's top coordinates (its `topk`
// largest positive values): Jaccard similarity of the sets that matter most to the inner product.
// One hash per element spreads it into one of K*L bins; empty bins are filled by optimal
// densification (probe other bins with a per-bin random sequence).
#pragma once
#include <cstdint>
#include <vector>

#include "lsh/hash_family.h"

namespace slide {

class DensifiedMinHash final : public HashFamily {
 public:
  DensifiedMinHash(const LshConfig& c, int dim, std::uint64_t seed);

 protected:
  void codes(const float* x, std::uint32_t* codes, HashScratch& scratch) const override;

 private:
  int topk_;
  std::uint64_t seed_;
};

}  // namespace slide
