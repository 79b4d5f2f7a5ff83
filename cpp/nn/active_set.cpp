#include "nn/active_set.h"

#include <algorithm>

namespace slide {

ActiveSetBuilder::ActiveSetBuilder(std::uint32_t neurons, int tables)
    : neurons_(neurons), stamp_of_(neurons, 0), hits_(neurons, 0), by_hits_(tables + 2, 0) {}

void ActiveSetBuilder::next_stamp() {
  if (++stamp_ == 0) {  // wrapped after 2^32 samples: reset once
    std::fill(stamp_of_.begin(), stamp_of_.end(), 0u);
    stamp_ = 1;
  }
}

std::uint32_t ActiveSetBuilder::build(const HashTables& tables, const std::uint32_t* buckets,
                                      const std::int32_t* labels, int num_labels, const NegativePool& pool,
                                      int min_active, int max_active, Rng& rng, std::vector<std::uint32_t>& out) {
  next_stamp();
  out.clear();
  candidates_.clear();
  for (int i = 0; i < num_labels; ++i) {
    std::uint32_t id = static_cast<std::uint32_t>(labels[i]);
    if (first_sight(id)) out.push_back(id);
  }
  if (pool.size > 0) {
    if (static_cast<std::uint32_t>(pool.draws) >= pool.size) {
      for (std::uint32_t i = 0; i < pool.size; ++i)
        if (first_sight(pool.ids[i])) out.push_back(pool.ids[i]);
    } else {
      for (int d = 0; d < pool.draws; ++d) {
        std::uint32_t id = pool.ids[rng.below(pool.size)];
        if (first_sight(id)) out.push_back(id);
      }
    }
  }
  const std::size_t from_labels = out.size();  // labels and pool draws are always kept
  for (int t = 0; t < tables.tables(); ++t) {
    std::uint32_t size;
    const std::uint32_t* ids = tables.bucket(t, buckets[t], &size);
    for (std::uint32_t i = 0; i < size; ++i) {
      std::uint32_t id = ids[i];
      if (first_sight(id)) {
        hits_[id] = 1;
        candidates_.push_back(id);
      } else if (hits_[id] < 0xFFFF) {
        ++hits_[id];  // labels also count, harmlessly: they are already in `out`
      }
    }
  }
  const std::uint32_t retrieved = static_cast<std::uint32_t>(candidates_.size());
  const std::size_t room = max_active > 0 ? static_cast<std::size_t>(max_active) : SIZE_MAX;
  if (from_labels + candidates_.size() <= room) {
    out.insert(out.end(), candidates_.begin(), candidates_.end());
  } else if (room > from_labels) {
    // Keep the candidates found in the most tables: a stable counting sort by hit count.
    const int levels = static_cast<int>(by_hits_.size());
    std::fill(by_hits_.begin(), by_hits_.end(), 0u);
    for (std::uint32_t id : candidates_) ++by_hits_[std::min<int>(hits_[id], levels - 1)];
    std::size_t want = room - from_labels, taken = 0;
    int threshold = levels - 1;
    for (; threshold > 0; --threshold) {
      if (taken + by_hits_[threshold] >= want) break;
      taken += by_hits_[threshold];
    }
    std::size_t at_threshold = want - taken;
    for (std::uint32_t id : candidates_) {
      int h = std::min<int>(hits_[id], levels - 1);
      if (h > threshold || (h == threshold && at_threshold > 0)) {
        if (h == threshold) --at_threshold;
        out.push_back(id);
      }
    }
  }
  // Random top-up. Rejection sampling while the set is sparse; a scan when it nearly fills.
  const std::size_t target = std::min<std::size_t>(static_cast<std::size_t>(std::max(min_active, 0)), neurons_);
  if (out.size() < target) {
    next_stamp();  // from here a stamp means "already in out"
    for (std::uint32_t id : out) stamp_of_[id] = stamp_;
    for (std::size_t attempts = 0; out.size() < target && attempts < 4 * target; ++attempts) {
      std::uint32_t id = rng.below(neurons_);
      if (first_sight(id)) out.push_back(id);
    }
    for (std::uint32_t id = 0; id < neurons_ && out.size() < target; ++id)  // nearly full: scan
      if (first_sight(id)) out.push_back(id);
  }
  return retrieved;
}

}  // namespace slide
