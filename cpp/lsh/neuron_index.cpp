#include "lsh/neuron_index.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <utility>

#include "common/check.h"
#include "common/parallel.h"
#include "common/rng.h"

namespace slide {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// An interval after growing by `g`, capped so that a long decaying schedule can never overflow.
std::int64_t grown(std::int64_t interval, double g) {
  return static_cast<std::int64_t>(std::min(static_cast<double>(interval) * g, static_cast<double>(kMaxScheduleCount)));
}
}  // namespace

NeuronIndex::NeuronIndex(const LshConfig& c, std::uint32_t neurons, int dim, std::uint64_t seed, int threads)
    : config_(c),
      neurons_(neurons),
      dim_(dim),
      seed_(seed),
      threads_(threads),
      tables_(c.l, effective_range_bits(c), c.bucket_size, c.policy, neurons),
      codes_(static_cast<std::size_t>(neurons) * c.l),
      order_(neurons),
      updates_(neurons),
      insertion_(neurons) {
  counters_.rehash_interval = c.rehash_every;
  counters_.rebuild_interval = c.rebuild_every;
  new_family();
}

void NeuronIndex::new_family() {
  family_ = make_hash_family(config_, dim_, mix64(seed_ + 0x632BE59BD9B4E019ULL * (counters_.generation + 1)));
}

std::size_t NeuronIndex::memory_bytes() const {
  return tables_.memory_bytes() + (codes_.size() + order_.size()) * sizeof(std::uint32_t) + updates_.size();
}

void NeuronIndex::hash_neurons(const float* weights, std::size_t stride, bool only_due) {
  const double t0 = now_seconds();
  const int L = config_.l;
  // Each thread counts in its own scratch and adds to the total once, when the region ends.
  struct Scratch {
    Scratch(int tables, std::atomic<std::int64_t>* sum) : buckets(tables), total(sum) {}
    Scratch(Scratch&& o) noexcept
        : hash(std::move(o.hash)), buckets(std::move(o.buckets)), total(o.total), count(std::exchange(o.count, 0)) {}
    ~Scratch() {
      if (count) total->fetch_add(count, std::memory_order_relaxed);
    }
    HashScratch hash;
    std::vector<std::uint32_t> buckets;
    std::atomic<std::int64_t>* total;
    std::int64_t count = 0;
  };
  std::atomic<std::int64_t> hashed{0};
  parallel_for(
      threads_, static_cast<std::int64_t>(neurons_), 256,
      [&] {
        Scratch s(L, &hashed);
        family_->prepare(s.hash);
        return s;
      },
      [&](Scratch& s, std::int64_t j) {
        if (only_due && !due(static_cast<std::uint32_t>(j))) return;
        family_->buckets(weights + j * stride, s.buckets.data(), s.hash);
        for (int t = 0; t < L; ++t) codes_[static_cast<std::size_t>(t) * neurons_ + j] = s.buckets[t];
        ++s.count;
      });
  counters_.rehashed_neurons += hashed;
  counters_.hashing_seconds += now_seconds() - t0;
}

void NeuronIndex::rebuild(const float* weights, std::size_t stride) {
  double t0 = now_seconds();
  ++counters_.generation;
  new_family();
  // A fresh random insertion order, so FIFO overflow does not favour low neuron ids.
  Rng rng(mix64(seed_ ^ (0xBF58476D1CE4E5B9ULL * counters_.generation)));
  std::iota(order_.data(), order_.data() + neurons_, 0u);
  for (std::uint32_t i = neurons_ - 1; i > 0; --i) std::swap(order_[i], order_[rng.below(i + 1)]);
  hash_neurons(weights, stride, /*only_due=*/false);
  updates_.fill_zero();
  tables_.build(codes_.data(), order_.data(), rng.next(), threads_);
  counters_.since_rebuild = 0;
  counters_.since_rehash = 0;
  counters_.maintenance_seconds += now_seconds() - t0;
}

void NeuronIndex::rehash(const float* weights, std::size_t stride) {
  double t0 = now_seconds();
  counters_.since_rehash = 0;
  std::uint32_t due_count = 0;
  for (std::uint32_t j = 0; j < neurons_; ++j) due_count += due(j);
  if (due_count == 0) return;  // nothing moved enough: the tables stand
  hash_neurons(weights, stride, /*only_due=*/true);
  // Unchanged neurons first, then the re-hashed ones: under FIFO the fresh entries win the buckets.
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < neurons_; ++i)
    if (!due(order_[i])) insertion_[n++] = order_[i];
  for (std::uint32_t i = 0; i < neurons_; ++i)
    if (due(order_[i])) insertion_[n++] = order_[i];
  std::copy(insertion_.begin(), insertion_.end(), order_.data());
  for (std::uint32_t j = 0; j < neurons_; ++j)
    if (due(j)) updates_[j] = 0;
  ++counters_.rehashes;
  tables_.build(codes_.data(), order_.data(), mix64(seed_ + counters_.rehashes), threads_);
  counters_.since_rehash = 0;
  counters_.maintenance_seconds += now_seconds() - t0;
}

void NeuronIndex::restore() {
  check_restored();
  new_family();
}

void NeuronIndex::check_restored() const {
  const std::uint32_t buckets = tables_.num_buckets();
  const std::size_t codes = static_cast<std::size_t>(neurons_) * config_.l;
  for (std::size_t i = 0; i < codes; ++i)
    SLIDE_REQUIRE(codes_[i] < buckets, "lsh.codes: table " << i / neurons_ << " puts neuron " << i % neurons_
                                                           << " in bucket " << codes_[i] << ", a table has " << buckets
                                                           << " buckets");
  std::vector<bool> seen(neurons_, false);
  for (std::uint32_t i = 0; i < neurons_; ++i) {
    SLIDE_REQUIRE(order_[i] < neurons_ && !seen[order_[i]],
                  "lsh.order: entry " << i << " is " << order_[i] << "; expected a permutation of the layer's "
                                      << neurons_ << " neurons");
    seen[order_[i]] = true;
  }
  tables_.check_restored();
  const IndexCounters& c = counters_;
  // Bounded well below 2^63 so the schedule's sums and products can never overflow.
  const std::int64_t limit = kMaxScheduleCount;
  SLIDE_REQUIRE(c.generation >= 0 && c.generation <= limit, "generation " << c.generation << " is out of range");
  SLIDE_REQUIRE(c.rehash_interval >= 1 && c.rehash_interval <= limit && c.rebuild_interval >= 1 &&
                    c.rebuild_interval <= limit,
                "rehash/rebuild intervals " << c.rehash_interval << "/" << c.rebuild_interval << " must be in 1.."
                                            << limit);
  SLIDE_REQUIRE(c.since_rehash >= 0 && c.since_rehash <= limit && c.since_rebuild >= 0 && c.since_rebuild <= limit,
                "samples since the last rehash/rebuild " << c.since_rehash << "/" << c.since_rebuild
                                                         << " must be in 0.." << limit);
}

void NeuronIndex::after_batch(std::int64_t samples, const float* weights, std::size_t stride) {
  counters_.since_rebuild += samples;
  counters_.since_rehash += samples;
  const double g = config_.schedule_growth;
  if (counters_.since_rebuild >= counters_.rebuild_interval) {
    rebuild(weights, stride);
    counters_.rebuild_interval = grown(counters_.rebuild_interval, g);
    counters_.rehash_interval = grown(counters_.rehash_interval, g);
  } else if (counters_.since_rehash >= counters_.rehash_interval) {
    rehash(weights, stride);
    counters_.rehash_interval = grown(counters_.rehash_interval, g);
  }
}

}  // namespace slide
