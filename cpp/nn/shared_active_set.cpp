#include "nn/shared_active_set.h"

#include <algorithm>
#include <cstring>

#include "common/parallel.h"

namespace slide {

SharedActiveSet::SharedActiveSet(std::uint32_t neurons, OutputShard shard, std::uint32_t held, int threads)
    : neurons_(neurons),
      shard_(shard),
      held_(held),
      stamp_of_(neurons, 0),
      position_(neurons, 0),
      counters_(std::max(1, threads)) {
  for (Counter& c : counters_) c.hits.assign(neurons, 0);
}

bool SharedActiveSet::add(std::uint32_t id) {
  if (stamp_of_[id] == stamp_) return false;
  stamp_of_[id] = stamp_;
  position_[id] = kAbsent;
  ids_.push_back(id);
  return true;
}

void SharedActiveSet::count(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                            int first_table, int end_table, Counter& c) const {
  const int L = tables.tables();
  const std::uint32_t offset = shard_.offset;  // the tables hold shard-local ids
  for (std::size_t b = 0; b < samples; ++b)
    for (int t = first_table; t < end_table; ++t) {
      std::uint32_t size;
      const std::uint32_t* bucket = tables.bucket(t, buckets[b * L + t], &size);
      for (std::uint32_t i = 0; i < size; ++i) {
        const std::uint32_t id = bucket[i] + offset;
        std::uint32_t& hits = c.hits[id];
        if (hits == kAbsent) continue;  // a label: already in
        if (hits++ == 0) c.seen.push_back(id);
      }
    }
}

void SharedActiveSet::pool_candidates(std::vector<std::uint32_t>& candidates, const std::vector<std::uint32_t>& hits,
                                      std::size_t max_candidates, Collective& comm, std::uint32_t* retrieved) {
  // Every rank's best `max_candidates` hold the best `max_candidates` of all, since a neuron's hits
  // are all counted on the one rank that holds it.
  std::vector<std::uint32_t> mine;
  mine.reserve(1 + 2 * candidates.size());
  mine.push_back(*retrieved);
  for (std::uint32_t id : candidates) {
    mine.push_back(hits[id]);
    mine.push_back(id);
  }
  comm.gather(mine.data(), mine.size() * sizeof(std::uint32_t), gathered_, gathered_counts_);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> all;  // (hits, id)
  *retrieved = 0;
  std::size_t at = 0;
  for (std::size_t bytes : gathered_counts_) {
    std::vector<std::uint32_t> part(bytes / sizeof(std::uint32_t));
    std::memcpy(part.data(), gathered_.data() + at, bytes);
    at += bytes;
    *retrieved += part[0];
    for (std::size_t i = 1; i + 1 < part.size(); i += 2) all.emplace_back(part[i], part[i + 1]);
  }
  const std::size_t keep = std::min(all.size(), max_candidates);
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                    [this](const auto& a, const auto& b) { return more_hits(a.first, a.second, b.first, b.second); });
  candidates.clear();
  for (std::size_t i = 0; i < keep; ++i) candidates.push_back(all[i].second);
}

std::uint32_t SharedActiveSet::build(const HashTables& tables, const std::uint32_t* buckets, std::size_t samples,
                                     const std::vector<std::uint32_t>& labels, std::size_t max_candidates,
                                     std::size_t min_size, Rng& rng, Collective* comm) {
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
  std::uint32_t retrieved = static_cast<std::uint32_t>(candidates.size());
  auto by_hits = [this, &hits](std::uint32_t a, std::uint32_t b) { return more_hits(hits[a], a, hits[b], b); };
  if (candidates.size() > max_candidates) {
    std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(max_candidates),
                     candidates.end(), by_hits);
  }
  std::size_t keep = std::min(candidates.size(), max_candidates);
  std::sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), by_hits);
  for (std::size_t i = keep; i < candidates.size(); ++i) all.hits[candidates[i]] = 0;
  candidates.resize(keep);
  if (comm) {
    const std::vector<std::uint32_t> local = candidates;
    pool_candidates(candidates, hits, max_candidates, *comm, &retrieved);
    for (std::uint32_t id : local) all.hits[id] = 0;
    keep = candidates.size();
  }
  for (std::size_t i = 0; i < keep; ++i) add(candidates[i]);
  for (std::uint32_t id : candidates) all.hits[id] = 0;
  for (Counter& c : counters_)
    for (std::size_t i = 0; i < num_labels; ++i) c.hits[ids_[i]] = 0;

  // Random top-up: rejection sampling while the set is sparse, a scan when it nearly fills.
  const std::size_t target = std::min<std::size_t>(min_size, neurons_);
  for (std::size_t attempts = 0; ids_.size() < target && attempts < 4 * target; ++attempts) add(rng.below(neurons_));
  for (std::uint32_t id = 0; id < neurons_ && ids_.size() < target; ++id) add(id);

  // The part this process holds, in set order.
  held_ids_.clear();
  for (std::uint32_t id : ids_) {
    if (id < shard_.offset || id - shard_.offset >= held_) continue;
    position_[id] = static_cast<std::uint32_t>(held_ids_.size());
    held_ids_.push_back(id - shard_.offset);
  }
  return retrieved;
}

}  // namespace slide
