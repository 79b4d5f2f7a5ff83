// The output neurons a whole batch shares when it trains as matrix products: every label of the
// batch (each sample's positives are the others' negatives), then the LSH candidates retrieved by
// the most (sample, table) pairs, then uniform random neurons up to a minimum size. Built once per
// batch from flat, reused buffers; a stamp array replaces clearing.
#pragma once
#include <cstdint>
#include <vector>

#include "common/rng.h"
#include "lsh/hash_tables.h"

namespace slide {

class SharedActiveSet {
 public:
  static constexpr std::uint32_t kAbsent = 0xFFFFFFFFu;

  explicit SharedActiveSet(std::uint32_t neurons);

  // `buckets` holds `samples` rows of tables.tables() bucket ids. Returns how many distinct
  // candidates the tables retrieved before the cap.
  std::uint32_t build(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                      const std::vector<std::uint32_t>& labels, std::size_t max_candidates, std::size_t min_size,
                      Rng& rng);

  const std::vector<std::uint32_t>& ids() const { return ids_; }
  // Where `id` sits in ids(), or kAbsent.
  std::uint32_t position(std::uint32_t id) const { return stamp_of_[id] == stamp_ ? position_[id] : kAbsent; }

 private:
  bool add(std::uint32_t id);

  std::uint32_t neurons_;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> stamp_of_, position_, hits_;
  std::vector<std::uint32_t> ids_, candidates_;
};

}  // namespace slide
