// Winner-take-all hashing: each code is the position of the largest of `bin_size` coordinates
// drawn from a random permutation (rank correlation, insensitive to scale). The densified variant
// (DWTA, SLIDE's default for output layers) treats exact zeros, e.g. ReLU outputs, as missing and
// fills an empty window from another one chosen by a fixed probe sequence, so sparse vectors still
// get L well-spread buckets.
#pragma once
#include <cstdint>
#include <vector>

#include "lsh/hash_family.h"

namespace slide {

class Wta final : public HashFamily {
 public:
  Wta(const LshConfig& c, int dim, std::uint64_t seed, bool densified);

 protected:
  void codes(const float* x, std::uint32_t* codes, HashScratch& scratch) const override;

 private:
  int bin_size_;
  bool densified_;
  std::uint64_t probe_seed_;
  std::vector<std::uint32_t> coords_;  // K*L windows of bin_size_ coordinates, simd/window_layout.h
};

}  // namespace slide
