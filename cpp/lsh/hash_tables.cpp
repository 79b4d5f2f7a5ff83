#include "lsh/hash_tables.h"

#include <algorithm>
#include <vector>

#include "common/check.h"
#include "common/parallel.h"
#include "common/rng.h"

namespace slide {

HashTables::HashTables(int tables, int range_bits, int bucket_size, BucketPolicy policy, std::uint32_t num_items)
    : tables_(tables),
      num_buckets_(1u << range_bits),
      bucket_size_(static_cast<std::uint32_t>(bucket_size)),
      policy_(policy),
      num_items_(num_items),
      offsets_(static_cast<std::size_t>(tables) * ((1u << range_bits) + 1)),
      ids_(static_cast<std::size_t>(tables) * num_items) {}

std::size_t HashTables::stored() const {
  std::size_t total = 0;
  for (int t = 0; t < tables_; ++t) total += offsets_[static_cast<std::size_t>(t) * (num_buckets_ + 1) + num_buckets_];
  return total;
}

void HashTables::check_restored() const {
  for (int t = 0; t < tables_; ++t) {
    const std::uint32_t* off = offsets_.data() + static_cast<std::size_t>(t) * (num_buckets_ + 1);
    const std::uint32_t* ids = ids_.data() + static_cast<std::size_t>(t) * num_items_;
    SLIDE_REQUIRE(off[0] == 0, "lsh.offsets: table " << t << " starts at " << off[0] << ", expected 0");
    for (std::uint32_t b = 0; b < num_buckets_; ++b) {
      SLIDE_REQUIRE(off[b + 1] >= off[b] && off[b + 1] - off[b] <= bucket_size_,
                    "lsh.offsets: table " << t << " bucket " << b << " spans " << off[b] << ".." << off[b + 1]
                                          << "; offsets must not decrease and a bucket holds at most " << bucket_size_
                                          << " ids");
    }
    SLIDE_REQUIRE(off[num_buckets_] <= num_items_, "lsh.offsets: table " << t << " stores " << off[num_buckets_]
                                                                          << " ids, the layer has " << num_items_
                                                                          << " neurons");
    for (std::uint32_t i = 0; i < off[num_buckets_]; ++i)
      SLIDE_REQUIRE(ids[i] < num_items_, "lsh.ids: table " << t << " holds neuron id " << ids[i] << ", the layer has "
                                                           << num_items_ << " neurons");
  }
}

void HashTables::build(const std::uint32_t* buckets, const std::uint32_t* order, std::uint64_t seed, int threads) {
  parallel_for(
      threads, tables_, 1, [this] { return std::vector<std::uint32_t>(num_buckets_); },
      [&](std::vector<std::uint32_t>& seen, std::int64_t t) {
        build_table(static_cast<int>(t), buckets, order, seed, seen.data());
      });
}

void HashTables::build_table(int t, const std::uint32_t* buckets, const std::uint32_t* order, std::uint64_t seed,
                             std::uint32_t* seen) {
  const std::uint32_t* table_buckets = buckets + static_cast<std::size_t>(t) * num_items_;
  std::uint32_t* off = offsets_.data() + static_cast<std::size_t>(t) * (num_buckets_ + 1);
  std::uint32_t* ids = ids_.data() + static_cast<std::size_t>(t) * num_items_;
  std::fill(seen, seen + num_buckets_, 0u);
  for (std::uint32_t i = 0; i < num_items_; ++i) ++seen[table_buckets[order[i]]];
  off[0] = 0;
  for (std::uint32_t b = 0; b < num_buckets_; ++b) off[b + 1] = off[b] + std::min(seen[b], bucket_size_);
  if (policy_ == BucketPolicy::kFifo) {
    // Keep the last bucket_size arrivals: the first (count - cap) are skipped.
    for (std::uint32_t b = 0; b < num_buckets_; ++b)
      seen[b] = seen[b] > bucket_size_ ? seen[b] - bucket_size_ : 0u;  // how many still to skip
    std::vector<std::uint32_t> fill(off, off + num_buckets_);
    for (std::uint32_t i = 0; i < num_items_; ++i) {
      std::uint32_t item = order[i];
      std::uint32_t b = table_buckets[item];
      if (seen[b] > 0) {
        --seen[b];
        continue;
      }
      ids[fill[b]++] = item;
    }
  } else {
    Rng rng(mix64(seed ^ (0xA24BAED4963EE407ULL * (t + 1))));
    std::fill(seen, seen + num_buckets_, 0u);
    for (std::uint32_t i = 0; i < num_items_; ++i) {
      std::uint32_t item = order[i];
      std::uint32_t b = table_buckets[item];
      std::uint32_t r = seen[b]++;
      if (r < bucket_size_) {
        ids[off[b] + r] = item;
      } else {
        std::uint32_t j = rng.below(r + 1);
        if (j < bucket_size_) ids[off[b] + j] = item;
      }
    }
  }
}

}  // namespace slide
