#include "nn/shared_active_set.h"

#include <algorithm>

namespace slide {

SharedActiveSet::SharedActiveSet(std::uint32_t neurons)
    : neurons_(neurons), stamp_of_(neurons, 0), position_(neurons, 0), hits_(neurons, 0) {}

bool SharedActiveSet::add(std::uint32_t id) {
  if (stamp_of_[id] == stamp_) return false;
  stamp_of_[id] = stamp_;
  position_[id] = static_cast<std::uint32_t>(ids_.size());
  ids_.push_back(id);
  return true;
}

std::uint32_t SharedActiveSet::build(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                                     const std::vector<std::uint32_t>& labels, std::size_t max_candidates,
                                     std::size_t min_size, Rng& rng) {
  if (++stamp_ == 0) {  // wrapped after 2^32 batches: reset once
    std::fill(stamp_of_.begin(), stamp_of_.end(), 0u);
    stamp_ = 1;
  }
  ids_.clear();
  candidates_.clear();
  // One random access per retrieved id: a label's hit counter holds kAbsent while it is counted.
  for (std::uint32_t id : labels)
    if (add(id)) hits_[id] = kAbsent;
  const std::size_t num_labels = ids_.size();
  const int L = tables.tables();
  for (std::size_t b = 0; b < samples; ++b)
    for (int t = 0; t < L; ++t) {
      std::uint32_t size;
      const std::uint32_t* bucket = tables.bucket(t, buckets[b * L + t], &size);
      for (std::uint32_t i = 0; i < size; ++i) {
        std::uint32_t& hits = hits_[bucket[i]];
        if (hits == kAbsent) continue;  // a label: already in
        if (hits++ == 0) candidates_.push_back(bucket[i]);
      }
    }
  const std::uint32_t retrieved = static_cast<std::uint32_t>(candidates_.size());
  auto more_hits = [this](std::uint32_t a, std::uint32_t b) { return hits_[a] != hits_[b] ? hits_[a] > hits_[b] : a < b; };
  if (candidates_.size() > max_candidates) {
    std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(max_candidates),
                     candidates_.end(), more_hits);
  }
  const std::size_t keep = std::min(candidates_.size(), max_candidates);
  std::sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep), more_hits);
  for (std::size_t i = 0; i < keep; ++i) add(candidates_[i]);
  for (std::uint32_t id : candidates_) hits_[id] = 0;
  for (std::size_t i = 0; i < num_labels; ++i) hits_[ids_[i]] = 0;

  // Random top-up: rejection sampling while the set is sparse, a scan when it nearly fills.
  const std::size_t target = std::min<std::size_t>(min_size, neurons_);
  for (std::size_t attempts = 0; ids_.size() < target && attempts < 4 * target; ++attempts) add(rng.below(neurons_));
  for (std::uint32_t id = 0; id < neurons_ && ids_.size() < target; ++id) add(id);
  return retrieved;
}

}  // namespace slide
