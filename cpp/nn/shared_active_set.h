// The output neurons a whole batch shares when it trains as matrix products: every label of the
// batch (each sample's positives are the others' negatives), then the LSH candidates retrieved by
// the most (sample, table) pairs, then uniform random neurons up to a minimum size. Built once per
// batch from flat, reused buffers; a stamp array replaces clearing. The threads count the
// retrievals of their share of the tables each in their own counter, then merge.
//
// Under MPI each rank's tables hold only its shard of the layer. The ranks pool their most
// retrieved candidates, so every rank builds the same set the whole layer's tables would have given
// (exactly so while no bucket overflows), and trains the part of it that it holds.
#pragma once
#include <cstdint>
#include <vector>

#include "common/rng.h"
#include "distributed/collective.h"
#include "lsh/hash_tables.h"

namespace slide {

class SharedActiveSet {
 public:
  static constexpr std::uint32_t kAbsent = 0xFFFFFFFFu;

  // `neurons`: the whole layer; this process holds rows [shard.offset, shard.offset + held).
  SharedActiveSet(std::uint32_t neurons, OutputShard shard, std::uint32_t held, int threads);

  // `buckets` holds `samples` rows of tables.tables() bucket ids; `labels` are the batch's (global
  // ids, every rank's). With `comm`, all ranks must call together. Returns how many distinct
  // candidates the tables (of all ranks) retrieved before the cap.
  std::uint32_t build(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                      const std::vector<std::uint32_t>& labels, std::size_t max_candidates, std::size_t min_size,
                      Rng& rng, Collective* comm);

  // The rows of this process's shard in the set, as shard-local row ids, in set order.
  const std::vector<std::uint32_t>& ids() const { return held_ids_; }
  // The size of the whole set, over every shard.
  std::size_t size() const { return ids_.size(); }
  // Where the neuron with global id `id` sits in ids(), or kAbsent (not in the set, or not held).
  std::uint32_t position(std::uint32_t id) const { return stamp_of_[id] == stamp_ ? position_[id] : kAbsent; }

 private:
  // Retrievals per neuron (kAbsent marks a label, which is in already) and the neurons seen.
  struct Counter {
    std::vector<std::uint32_t> hits, seen;
  };

  bool add(std::uint32_t id);
  void count(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples, int first_table,
             int end_table, Counter& c) const;
  bool more_hits(std::uint32_t hits_a, std::uint32_t a, std::uint32_t hits_b, std::uint32_t b) const {
    return hits_a != hits_b ? hits_a > hits_b : a < b;
  }
  // The best `max_candidates` of every rank's best, as (hits, id) pairs in order.
  void pool_candidates(std::vector<std::uint32_t>& candidates, const std::vector<std::uint32_t>& hits,
                       std::size_t max_candidates, Collective& comm, std::uint32_t* retrieved);

  std::uint32_t neurons_;
  OutputShard shard_;
  std::uint32_t held_;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> stamp_of_, position_;
  std::vector<Counter> counters_;  // one per thread; the first ends up with the merged counts
  std::vector<std::uint32_t> ids_, held_ids_;
  std::vector<std::uint8_t> gathered_;
  std::vector<std::size_t> gathered_counts_;
};

}  // namespace slide
