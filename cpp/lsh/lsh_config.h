// Everything that configures one LSH-sampled layer: the hash family, the tables and the
// maintenance schedule.
#pragma once
#include <cstdint>

namespace slide {

// The largest sample count or interval a schedule holds (about 4.6e18): far beyond any run, and
// small enough that adding a batch to it can never overflow.
constexpr std::int64_t kMaxScheduleCount = std::int64_t{1} << 62;

enum class HashKind { kSimHash, kWta, kDwta, kMinHash };
enum class BucketPolicy { kFifo, kReservoir };

struct LshConfig {
  HashKind family = HashKind::kDwta;
  int k = 6;                 // codes per table
  int l = 50;                // tables
  int range_bits = 0;        // buckets per table = 2^range_bits; 0 = min(k * code_bits, 18)
  int bin_size = 8;          // WTA/DWTA window; minhash and (D)WTA codes take log2(bin_size) bits
  int bucket_size = 128;     // ids kept per bucket
  BucketPolicy policy = BucketPolicy::kFifo;
  float simhash_density = 1.0f / 3.0f;  // share of coordinates each SimHash projection reads
  int minhash_topk = 0;      // minhash set = top-k coordinates by value; 0 = dim / 4
  int min_active = 0;        // top up the active set with random neurons to this size
  int max_active = 0;        // keep at most this many (most frequent candidates first); 0 = all
  int batch_negatives = 64;  // per sample, this many labels drawn from the batch's label union
  // > 0: the batch shares one active set (its labels, this many LSH candidates, top-up to
  // min_active) and trains as matrix products; 0: SLIDE's per-sample active sets.
  int batch_active = 0;
  std::int64_t rehash_every = 6400;     // samples between re-inserting changed neurons
  std::int64_t rebuild_every = 128000;  // samples between drawing new hash functions
  int rehash_min_updates = 4;           // re-hash a neuron once it has had this many optimizer updates
  double schedule_growth = 1.0;         // both intervals are multiplied by this after each use
  // Training raises min_active to late_min_active once the network has trained late_after
  // samples: more negatives once the curve levels off (0 = never).
  int late_min_active = 0;
  std::int64_t late_after = 0;
};

// Bits each code of the family takes.
int code_bits(const LshConfig& c);
// Effective table width once defaults are resolved.
int effective_range_bits(const LshConfig& c);
// The active set's size floor while training, after `samples_seen` samples: min_active, raised to
// late_min_active from late_after samples on.
int training_min_active(const LshConfig& c, std::int64_t samples_seen);
// Throws std::invalid_argument naming the bad field.
void validate(const LshConfig& c, int dim, std::uint32_t num_neurons);

}  // namespace slide
