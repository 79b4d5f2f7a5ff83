#include "nn/shared_active_set.h"

#include <algorithm>

#include "common/parallel.h"

namespace slide {

SharedActiveSet::SharedActiveSet(std::uint32_t neurons, int threads)
    : neurons_(neurons), stamp_of_(neurons, 0), position_(neurons, 0), counters_(std::max(1, threads)) {
  for (Counter& c : counters_) c.hits.assign(neurons, 0);
}

bool SharedActiveSet::add(std::uint32_t id) {
  if (stamp_of_[id] == stamp_) return false;
  stamp_of_[id] = stamp_;
  position_[id] = static_cast<std::uint32_t>(ids_.size());
  ids_.push_back(id);
  return true;
}

void SharedActiveSet::count(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                            int first_table, int end_table, Counter& c) const {
  const int L = tables.tables();
  for (std::size_t b = 0; b < samples; ++b)
    for (int t = first_table; t < end_table; ++t) {
      std::uint32_t size;
      const std::uint32_t* bucket = tables.bucket(t, buckets[b * L + t], &size);
      for (std::uint32_t i = 0; i < size; ++i) {
        std::uint32_t& hits = c.hits[bucket[i]];
        if (hits == kAbsent) continue;  // a label: already in
        if (hits++ == 0) c.seen.push_back(bucket[i]);
      }
    }
}

std::uint32_t SharedActiveSet::build(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                                     const std::vector<std::uint32_t>& labels, std::size_t max_candidates,
                                     std::size_t min_size, Rng& rng) {
  if (++stamp_ == 0) {  // wrapped after 2^32 batches: reset once
    std::fill(stamp_of_.begin(), stamp_of_.end(), 0u);
    stamp_ = 1;
  }
  ids_.clear();
  for (std::uint32_t id : labels) add(id);
  const std::size_t num_labels = ids_.size();
  const int L = tables.tables();
  int team_size = 1;
  parallel_team(static_cast<int>(counters_.size()), [&](int t, int team) {
    if (t == 0) team_size = team;
    Counter& c = counters_[t];
    c.seen.clear();
    for (std::size_t i = 0; i < num_labels; ++i) c.hits[ids_[i]] = kAbsent;
    count(tables, buckets, samples, L * t / team, L * (t + 1) / team, c);
  });
  // Merge into the first counter; each other counter is left empty and all zero (labels aside).
  Counter& all = counters_[0];
  for (int t = 1; t < team_size; ++t) {
    for (std::uint32_t id : counters_[t].seen) {
      std::uint32_t& h = counters_[t].hits[id];
      if (all.hits[id] == 0) all.seen.push_back(id);
      all.hits[id] += h;
      h = 0;
    }
    counters_[t].seen.clear();
  }
  std::vector<std::uint32_t>& candidates = all.seen;
  const std::vector<std::uint32_t>& hits = all.hits;
  const std::uint32_t retrieved = static_cast<std::uint32_t>(candidates.size());
  auto more_hits = [&hits](std::uint32_t a, std::uint32_t b) { return hits[a] != hits[b] ? hits[a] > hits[b] : a < b; };
  if (candidates.size() > max_candidates) {
    std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(max_candidates),
                     candidates.end(), more_hits);
  }
  const std::size_t keep = std::min(candidates.size(), max_candidates);
  std::sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), more_hits);
  for (std::size_t i = 0; i < keep; ++i) add(candidates[i]);
  for (std::uint32_t id : candidates) all.hits[id] = 0;
  for (Counter& c : counters_)
    for (std::size_t i = 0; i < num_labels; ++i) c.hits[ids_[i]] = 0;

  // Random top-up: rejection sampling while the set is sparse, a scan when it nearly fills.
  const std::size_t target = std::min<std::size_t>(min_size, neurons_);
  for (std::size_t attempts = 0; ids_.size() < target && attempts < 4 * target; ++attempts) add(rng.below(neurons_));
  for (std::uint32_t id = 0; id < neurons_ && ids_.size() < target; ++id) add(id);
  return retrieved;
}

}  // namespace slide
