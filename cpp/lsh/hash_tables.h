// L hash tables stored as CSR (one offsets array of 2^range+1 entries and one id array per
// table), so memory follows what is stored instead of L x 2^range x bucket_size slots. Buckets
// hold at most `bucket_size` ids; on overflow FIFO keeps the latest inserted, reservoir a uniform
// sample. Tables are rebuilt from the neurons' bucket ids, one table per thread.
#pragma once
#include <cstdint>

#include "common/aligned_array.h"
#include "lsh/lsh_config.h"

namespace slide {

class HashTables {
 public:
  HashTables(int tables, int range_bits, int bucket_size, BucketPolicy policy, std::uint32_t num_items);

  // buckets[t * n + i] is item i's bucket in table t (table-major: each table's pass is sequential); items are inserted in `order` (n entries).
  void build(const std::uint32_t* buckets, const std::uint32_t* order, std::uint64_t seed, int threads);

  const std::uint32_t* bucket(int table, std::uint32_t b, std::uint32_t* size) const {
    const std::uint32_t* off = offsets_.data() + static_cast<std::size_t>(table) * (num_buckets_ + 1);
    *size = off[b + 1] - off[b];
    return ids_.data() + static_cast<std::size_t>(table) * num_items_ + off[b];
  }

  int tables() const { return tables_; }
  std::uint32_t num_buckets() const { return num_buckets_; }
  std::uint32_t num_items() const { return num_items_; }
  std::size_t stored() const;
  std::size_t memory_bytes() const { return (offsets_.size() + ids_.size()) * sizeof(std::uint32_t); }

  // Throws std::invalid_argument unless offsets and ids describe tables that build() could have
  // made: restored storage comes from a file, and every later lookup trusts it without a check.
  void check_restored() const;

  // Raw storage, for checkpoints.
  AlignedArray<std::uint32_t>& offsets() { return offsets_; }
  AlignedArray<std::uint32_t>& ids() { return ids_; }

 private:
  void build_table(int t, const std::uint32_t* buckets, const std::uint32_t* order, std::uint64_t seed,
                   std::uint32_t* seen);

  int tables_;
  std::uint32_t num_buckets_;
  std::uint32_t bucket_size_;
  BucketPolicy policy_;
  std::uint32_t num_items_;
  AlignedArray<std::uint32_t> offsets_;  // tables x (num_buckets + 1)
  AlignedArray<std::uint32_t> ids_;      // tables x num_items (each table uses a prefix)
};

}  // namespace slide
