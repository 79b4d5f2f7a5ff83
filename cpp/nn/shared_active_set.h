// The output neurons a whole batch shares when it trains as matrix products: every label of the
// batch (each sample's positives are the others' negatives), then the LSH candidates retrieved by
// the most (sample, table) pairs, then uniform random neurons up to a minimum size. Built once per
// batch from flat, reused buffers; a stamp array replaces clearing. The threads count the
// retrievals of their share of the tables each in their own counter, then merge.
#pragma once
#include <cstdint>
#include <vector>

#include "common/rng.h"
#include "lsh/hash_tables.h"

namespace slide {

class SharedActiveSet {
 public:
  static constexpr std::uint32_t kAbsent = 0xFFFFFFFFu;

  SharedActiveSet(std::uint32_t neurons, int threads);

  // `buckets` holds `samples` rows of tables.tables() bucket ids. Returns how many distinct
  // candidates the tables retrieved before the cap.
  std::uint32_t build(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                      const std::vector<std::uint32_t>& labels, std::size_t max_candidates, std::size_t min_size,
                      Rng& rng);

  const std::vector<std::uint32_t>& ids() const { return ids_; }
  // Where `id` sits in ids(), or kAbsent.
  std::uint32_t position(std::uint32_t id) const { return stamp_of_[id] == stamp_ ? position_[id] : kAbsent; }

 private:
  // Retrievals per neuron (kAbsent marks a label, which is in already) and the neurons seen.
  struct Counter {
    std::vector<std::uint32_t> hits, seen;
  };

  bool add(std::uint32_t id);
  void count(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples, int first_table,
             int end_table, Counter& c) const;

  std::uint32_t neurons_;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> stamp_of_, position_;
  std::vector<Counter> counters_;  // one per thread; the first ends up with the merged counts
  std::vector<std::uint32_t> ids_;
};

}  // namespace slide
