// The LSH index of one sampled layer: its hash family, the neurons' current bucket ids, the
// tables, and the maintenance schedule. Each neuron counts the optimizer updates since it was last
// hashed (a racy saturating byte counter: a lost increment only delays a re-hash); a rehash visits
// only neurons with at least `rehash_min_updates`, since one small step rarely moves a bucket.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/aligned_array.h"
#include "lsh/hash_family.h"
#include "lsh/hash_tables.h"
#include "lsh/lsh_config.h"

namespace slide {

struct IndexCounters {
  std::int64_t generation = 0;      // number of rebuilds (selects the hash functions)
  std::int64_t rehash_interval = 0;
  std::int64_t rebuild_interval = 0;
  std::int64_t since_rehash = 0;
  std::int64_t since_rebuild = 0;
  std::int64_t rehashes = 0;
  std::int64_t rehashed_neurons = 0;
  double maintenance_seconds = 0.0;  // all of it: hashing + table builds
  double hashing_seconds = 0.0;
};

class NeuronIndex {
 public:
  NeuronIndex(const LshConfig& c, std::uint32_t neurons, int dim, std::uint64_t seed, int threads);

  // Draw new hash functions (generation + 1) and hash every neuron.
  void rebuild(const float* weights, std::size_t stride);
  // Re-hash the dirty neurons and rebuild the tables, dirty ones inserted last.
  void rehash(const float* weights, std::size_t stride);
  // Called after each batch: runs rehash/rebuild when their interval has passed.
  void after_batch(std::int64_t samples, const float* weights, std::size_t stride);
  // After a checkpoint restored codes, order, tables and counters: check them (std::invalid_argument
  // naming the array; a file is untrusted) and regenerate the hash functions.
  void restore();

  void mark_updated(std::uint32_t neuron) {
    if (updates_[neuron] < 255) ++updates_[neuron];
  }

  const LshConfig& config() const { return config_; }
  const HashFamily& family() const { return *family_; }
  const HashTables& tables() const { return tables_; }
  HashTables& tables() { return tables_; }
  IndexCounters& counters() { return counters_; }
  const IndexCounters& counters() const { return counters_; }
  AlignedArray<std::uint32_t>& codes() { return codes_; }
  AlignedArray<std::uint32_t>& order() { return order_; }
  AlignedArray<std::uint8_t>& updates() { return updates_; }
  std::size_t memory_bytes() const;

 private:
  bool due(std::uint32_t neuron) const { return updates_[neuron] >= config_.rehash_min_updates; }
  void hash_neurons(const float* weights, std::size_t stride, bool only_due);
  void new_family();
  void check_restored() const;

  LshConfig config_;
  std::uint32_t neurons_;
  int dim_;
  std::uint64_t seed_;
  int threads_;
  std::unique_ptr<HashFamily> family_;
  HashTables tables_;
  AlignedArray<std::uint32_t> codes_;   // L x neurons bucket ids (table-major)
  AlignedArray<std::uint32_t> order_;   // insertion order of the last build
  AlignedArray<std::uint8_t> updates_;  // optimizer updates since the neuron was last hashed
  std::vector<std::uint32_t> insertion_;  // scratch for rehash
  IndexCounters counters_;
};

}  // namespace slide
