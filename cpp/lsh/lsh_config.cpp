#include "lsh/lsh_config.h"

#include <algorithm>

#include "common/check.h"

namespace slide {

int code_bits(const LshConfig& c) {
  if (c.family == HashKind::kSimHash) return 1;
  int bits = 0;
  while ((std::int64_t{1} << bits) < c.bin_size) ++bits;
  return std::max(bits, 1);
}

// In 64 bits: k can be anything a user typed, and k x bits must not wrap past the "<= 32" check.
static std::int64_t code_width(const LshConfig& c) { return std::int64_t{c.k} * code_bits(c); }

int effective_range_bits(const LshConfig& c) {
  const int total = static_cast<int>(std::min<std::int64_t>(code_width(c), 32));
  if (c.range_bits <= 0) return std::min(total, 18);
  return std::min(total, c.range_bits);
}

int training_min_active(const LshConfig& c, std::int64_t samples_seen) {
  if (c.late_min_active > 0 && samples_seen >= c.late_after) return std::max(c.min_active, c.late_min_active);
  return c.min_active;
}

void validate(const LshConfig& c, int dim, std::uint32_t num_neurons) {
  SLIDE_REQUIRE(c.k >= 1, "lsh.k must be >= 1, got " << c.k);
  SLIDE_REQUIRE(c.l >= 1, "lsh.l (number of tables) must be >= 1, got " << c.l);
  SLIDE_REQUIRE(c.l <= 4096, "lsh.l must be <= 4096, got " << c.l);
  SLIDE_REQUIRE(c.bin_size >= 2, "lsh.bin_size must be >= 2, got " << c.bin_size);
  if (c.family == HashKind::kWta || c.family == HashKind::kDwta)
    SLIDE_REQUIRE(c.bin_size <= dim, "lsh.bin_size (" << c.bin_size << ") must not exceed the layer input width ("
                                                      << dim << ") for WTA/DWTA");
  SLIDE_REQUIRE(code_width(c) <= 32, "lsh.k x code bits must be <= 32 (k=" << c.k << ", " << code_bits(c)
                                       << " bits per code, so k <= " << 32 / code_bits(c) << ")");
  SLIDE_REQUIRE(c.range_bits >= 0 && c.range_bits <= 24,
                "lsh.range_bits must be in [1, 24] (or 0 for the default), got " << c.range_bits);
  SLIDE_REQUIRE(c.bucket_size >= 1, "lsh.bucket_size must be >= 1, got " << c.bucket_size);
  SLIDE_REQUIRE(c.simhash_density > 0.0f && c.simhash_density <= 1.0f,
                "lsh.simhash_density must be in (0, 1], got " << c.simhash_density);
  SLIDE_REQUIRE(c.minhash_topk >= 0 && c.minhash_topk <= dim,
                "lsh.minhash_topk must be in [0, " << dim << "], got " << c.minhash_topk);
  SLIDE_REQUIRE(c.min_active >= 0, "lsh.min_active must be >= 0, got " << c.min_active);
  SLIDE_REQUIRE(c.batch_negatives >= 0, "lsh.batch_negatives must be >= 0, got " << c.batch_negatives);
  SLIDE_REQUIRE(c.batch_active >= 0, "lsh.batch_active must be >= 0, got " << c.batch_active);
  SLIDE_REQUIRE(c.max_active >= 0, "lsh.max_active must be >= 0, got " << c.max_active);
  SLIDE_REQUIRE(c.rehash_every >= 1, "lsh.rehash_every must be >= 1 sample, got " << c.rehash_every);
  SLIDE_REQUIRE(c.rebuild_every >= 1, "lsh.rebuild_every must be >= 1 sample, got " << c.rebuild_every);
  SLIDE_REQUIRE(c.rehash_min_updates >= 1 && c.rehash_min_updates <= 255,
                "lsh.rehash_min_updates must be in [1, 255], got " << c.rehash_min_updates);
  SLIDE_REQUIRE(c.schedule_growth >= 1.0, "lsh.schedule_growth must be >= 1, got " << c.schedule_growth);
  SLIDE_REQUIRE(c.late_min_active >= 0, "lsh.late_min_active must be >= 0, got " << c.late_min_active);
  SLIDE_REQUIRE(c.late_after >= 0 && c.late_after <= kMaxScheduleCount,
                "lsh.late_after must be in 0..2^62 samples, got " << c.late_after);
  SLIDE_REQUIRE(num_neurons >= 1, "a sampled layer needs at least one neuron");
}

}  // namespace slide
