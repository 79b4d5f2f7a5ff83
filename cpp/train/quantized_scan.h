// Exact top-k over a wide output layer for less than its fp32 GEMM: an int8 scan bounds its own
// error for every (row, sample), keeps each row whose upper bound still reaches the sample's k-th
// best lower bound, and scores only those rows again in fp32. No row that could be in the top-k
// is ever dropped, so the answer is the fp32 scan's (the oracle it is tested against), up to the
// rounding of fp32 sums taken in another order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "nn/parameters.h"
#include "train/top_k.h"

namespace slide {

// Below this many output rows the fp32 GEMM costs about what quantizing the weights does.
constexpr std::uint32_t kQuantizedScanMinRows = 4096;
// Quantizing the weights costs about what scanning this many samples in fp32 saves.
constexpr std::int64_t kQuantizedScanMinSamples = 64;

// The output layer's weights as int8 with one scale per row, and what the error bound needs.
struct QuantizedRows {
  std::uint32_t rows = 0;
  std::size_t width = 0;  // the layer's input width
  std::size_t depth = 0;  // width rounded up to the kernel's step; the padding is zero
  std::vector<std::int8_t> weights;  // rows x depth
  std::vector<float> scale;          // per row: max |w| / 127, so |w - scale * q| <= scale / 2
  std::vector<float> l1;             // per row: sum |w|
  bool finite = true;                // false when a weight is NaN or infinite: no bound holds then
};

QuantizedRows quantize_rows(const Parameters& p, int threads);

// A hash of every weight's bits (row by row, the row padding left out): any change to a single
// weight changes it. Reading the weights once costs a tenth of quantizing them.
std::uint64_t weights_fingerprint(const Parameters& p, int threads);

// The last quantization of an output layer, used again while the weights it was made from are
// unchanged. Unchanged is checked on every use by the weights' fingerprint, never assumed, so
// weights changed by training, by loading or by a user writing into Network.weights() are never
// scanned through a stale copy.
class QuantizedCache {
 public:
  // The layer's quantization, made now unless the cached one has the weights' fingerprint. The
  // copy stays valid while the caller holds it, whatever later calls do.
  std::shared_ptr<const QuantizedRows> get(const Parameters& p, int threads);
  std::int64_t hits() const { return hits_; }
  std::int64_t misses() const { return misses_; }

 private:
  std::mutex mutex_;
  std::shared_ptr<const QuantizedRows> rows_;
  std::uint64_t fingerprint_ = 0;
  std::int64_t hits_ = 0, misses_ = 0;
};

// The top-k of n samples whose hidden activations are `hidden` (sample-major, n x q.width), pushed
// into best[0..n). Returns false and pushes nothing when a hidden value is negative or not
// finite (the bound needs values in [0, inf)): the caller scans in fp32 instead.
bool quantized_top_k(const QuantizedRows& q, const Parameters& p, const float* hidden, std::size_t n,
                     std::vector<TopK>& best);

}  // namespace slide
