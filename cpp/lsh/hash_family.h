// One interface for every LSH family: a vector of `dim` floats -> K codes in each of L tables ->
// L bucket ids. Families are immutable after construction, so threads share one instance.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "lsh/lsh_config.h"

namespace slide {

// Per-thread buffers a family needs while hashing (allocated once, reused per call).
struct HashScratch {
  std::vector<std::uint32_t> codes;
  std::vector<float> values;
  std::vector<std::uint32_t> ids;
  std::vector<std::uint32_t> keys;
};

class HashFamily {
 public:
  HashFamily(const LshConfig& c, int dim);
  virtual ~HashFamily() = default;

  // Writes the L bucket ids of x into out[0..L).
  void buckets(const float* x, std::uint32_t* out, HashScratch& scratch) const;
  void prepare(HashScratch& scratch) const;

  int dim() const { return dim_; }
  int tables() const { return l_; }
  int range_bits() const { return range_bits_; }

 protected:
  // Writes K*L codes (each < 2^code_bits) into codes.
  virtual void codes(const float* x, std::uint32_t* codes, HashScratch& scratch) const = 0;

  int dim_, k_, l_, code_bits_, range_bits_;
};

std::unique_ptr<HashFamily> make_hash_family(const LshConfig& c, int dim, std::uint64_t seed);

}  // namespace slide
