#include "lsh/hash_family.h"

#include <algorithm>

#include "common/rng.h"
#include "lsh/minhash.h"
#include "lsh/simhash.h"
#include "lsh/wta.h"

namespace slide {

HashFamily::HashFamily(const LshConfig& c, int dim)
    : dim_(dim), k_(c.k), l_(c.l), code_bits_(code_bits(c)), range_bits_(effective_range_bits(c)) {}

void HashFamily::prepare(HashScratch& s) const {
  s.codes.resize(static_cast<std::size_t>(k_) * l_);
  s.values.resize(std::max<std::size_t>(dim_, static_cast<std::size_t>(k_) * l_));  // inputs or projections
  s.ids.resize(dim_);
  s.keys.resize(static_cast<std::size_t>(k_) * l_);
}

void HashFamily::buckets(const float* x, std::uint32_t* out, HashScratch& s) const {
  codes(x, s.codes.data(), s);
  const int total_bits = k_ * code_bits_;
  for (int t = 0; t < l_; ++t) {
    const std::uint32_t* c = s.codes.data() + static_cast<std::size_t>(t) * k_;
    std::uint64_t packed = 0;
    for (int i = 0; i < k_; ++i) packed = (packed << code_bits_) | c[i];
    // Concatenated codes are the bucket when they fit; otherwise fold them with a strong mix.
    out[t] = total_bits <= range_bits_
                 ? static_cast<std::uint32_t>(packed)
                 : static_cast<std::uint32_t>(mix64(packed + 0x51ed27ULL * (t + 1)) >> (64 - range_bits_));
  }
}

std::unique_ptr<HashFamily> make_hash_family(const LshConfig& c, int dim, std::uint64_t seed) {
  switch (c.family) {
    case HashKind::kSimHash:
      return std::make_unique<SimHash>(c, dim, seed);
    case HashKind::kWta:
      return std::make_unique<Wta>(c, dim, seed, /*densified=*/false);
    case HashKind::kDwta:
      return std::make_unique<Wta>(c, dim, seed, /*densified=*/true);
    case HashKind::kMinHash:
      return std::make_unique<DensifiedMinHash>(c, dim, seed);
  }
  return nullptr;
}

}  // namespace slide
