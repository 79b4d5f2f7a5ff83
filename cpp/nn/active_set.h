// Builds one sample's active set for a sampled layer in flat per-thread buffers: the true labels
// (always), the union of the L buckets the sample hashes to, then optionally a cap that keeps the
// candidates found in the most tables, and a random top-up to a minimum size. A stamp array
// replaces clearing, so a sample costs O(candidates), never O(layer width).
#pragma once
#include <cstdint>
#include <vector>

#include "common/rng.h"
#include "lsh/hash_tables.h"

namespace slide {

// Negatives shared by a batch: the union of its samples' labels. Popular labels are in it in
// proportion to their frequency, which is what keeps them from drifting up in a sampled softmax.
struct NegativePool {
  const std::uint32_t* ids = nullptr;
  std::uint32_t size = 0;
  int draws = 0;  // per sample
};

class ActiveSetBuilder {
 public:
  explicit ActiveSetBuilder(std::uint32_t neurons, int tables);

  // Fills `out`: labels first (in the order given), then draws from the batch pool, then LSH
  // candidates. Returns the number of candidates retrieved from the tables before capping/top-up.
  std::uint32_t build(const HashTables& tables, const std::uint32_t* buckets, const std::int32_t* labels,
                      int num_labels, const NegativePool& pool, int min_active, int max_active, Rng& rng,
                      std::vector<std::uint32_t>& out);

 private:
  bool first_sight(std::uint32_t id) {
    if (stamp_of_[id] == stamp_) return false;
    stamp_of_[id] = stamp_;
    return true;
  }
  void next_stamp();

  std::uint32_t neurons_;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> stamp_of_;
  std::vector<std::uint16_t> hits_;
  std::vector<std::uint32_t> candidates_;
  std::vector<std::uint32_t> by_hits_;  // counting-sort buckets for the cap
};

}  // namespace slide
