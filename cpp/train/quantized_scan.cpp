#include "train/quantized_scan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/parallel.h"
#include "simd/kernels.h"

namespace slide {

namespace {

// Output rows per int8 pass: their integer scores for a block of samples stay in L2.
constexpr std::uint32_t kRowsPerPass = 512;
// The bound with room for fp32 rounding: in the scale products, and in the fp32 rescoring the
// answer is compared with (both far below 1% of the quantization error they ride on).
constexpr float kBoundMargin = 1.02f;
// Candidates a sample holds before the ones its bar has passed are dropped.
constexpr std::size_t kPruneAt = 4096;

// Rounds half away from zero: within 1/2 of x, as the bound needs, whatever the rounding mode.
inline int nearest(float x) { return static_cast<int>(x + (x < 0.0f ? -0.5f : 0.5f)); }

struct Candidate {
  std::uint32_t row;
  float upper;
};

// One block's samples as bytes in [0, kInt8SampleMax], with what each contributes to the bound:
// |h - step * q| <= step / 2 (half_step), and the quantized sample's L1 norm over 2, with the
// margin (half_l1).
struct QuantizedSamples {
  std::vector<std::uint8_t> bytes;  // n x depth
  std::vector<float> step, half_step, half_l1;
};

bool quantize_samples(const float* hidden, std::size_t n, std::size_t width, std::size_t depth,
                      QuantizedSamples& s) {
  s.bytes.assign(n * depth, 0);
  s.step.resize(n);
  s.half_step.resize(n);
  s.half_l1.resize(n);
  for (std::size_t b = 0; b < n; ++b) {
    const float* h = hidden + b * width;
    float top = 0.0f;
    for (std::size_t j = 0; j < width; ++j) {
      if (!(h[j] >= 0.0f) || h[j] == std::numeric_limits<float>::infinity()) return false;
      top = std::max(top, h[j]);
    }
    const float step = top / kInt8SampleMax, inverse = top > 0.0f ? kInt8SampleMax / top : 0.0f;
    std::uint32_t sum = 0;
    for (std::size_t j = 0; j < width; ++j) {
      const auto q = static_cast<std::uint8_t>(std::min(nearest(h[j] * inverse), kInt8SampleMax));
      s.bytes[b * depth + j] = q;
      sum += q;
    }
    s.step[b] = step;
    s.half_step[b] = 0.5f * step;
    s.half_l1[b] = kBoundMargin * 0.5f * step * static_cast<float>(sum);
  }
  return true;
}

}  // namespace

QuantizedRows quantize_rows(const Parameters& p, int threads) {
  QuantizedRows q;
  q.rows = p.rows;
  q.width = p.cols;
  q.depth = (p.cols + kInt8Depth - 1) / kInt8Depth * kInt8Depth;
  q.weights.assign(static_cast<std::size_t>(q.rows) * q.depth, 0);
  q.scale.resize(q.rows);
  q.l1.resize(q.rows);
  const Kernels& k = kernels();
  std::atomic<bool> finite{true};
  parallel_for(threads, q.rows, [&](std::int64_t i) {
    float l1 = 0.0f;
    const float top = k.int8_quantize(p.row(static_cast<std::uint32_t>(i)), q.width,
                                      &q.weights[static_cast<std::size_t>(i) * q.depth], &l1);
    if (!std::isfinite(l1)) {  // NaN and inf weights, and sums too large for a float
      finite.store(false, std::memory_order_relaxed);
      return;
    }
    q.scale[i] = top / kInt8WeightMax;
    q.l1[i] = l1;
  });
  q.finite = finite.load();
  return q;
}

std::uint64_t weights_fingerprint(const Parameters& p, int threads) {
  // Four interleaved polynomial hashes mod 2^64 per block of rows (an odd multiplier is
  // invertible, so changing one word always changes its lane), blocks combined in order.
  constexpr std::uint32_t kRowsPerBlock = 4096;
  constexpr std::uint64_t kOdd = 0x9E3779B97F4A7C15ULL;
  const std::uint32_t blocks = (p.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<std::uint64_t> block_hash(blocks);
  parallel_for(threads, blocks, [&](std::int64_t b) {
    std::uint64_t lane[4] = {1, 2, 3, 4};
    const std::uint32_t end = std::min<std::uint32_t>(p.rows, static_cast<std::uint32_t>(b + 1) * kRowsPerBlock);
    for (std::uint32_t i = static_cast<std::uint32_t>(b) * kRowsPerBlock; i < end; ++i) {
      const float* w = p.row(i);
      std::size_t j = 0;
      for (; j + 8 <= p.cols; j += 8) {
        for (int l = 0; l < 4; ++l) {
          std::uint64_t word;
          std::memcpy(&word, w + j + 2 * l, sizeof word);
          lane[l] = lane[l] * kOdd + word;
        }
      }
      for (; j < p.cols; ++j) {
        std::uint32_t word;
        std::memcpy(&word, w + j, sizeof word);
        lane[0] = lane[0] * kOdd + word;
      }
    }
    block_hash[static_cast<std::size_t>(b)] = ((lane[0] * kOdd + lane[1]) * kOdd + lane[2]) * kOdd + lane[3];
  });
  std::uint64_t h = (static_cast<std::uint64_t>(p.rows) << 32) ^ p.cols;
  for (const std::uint64_t b : block_hash) h = h * kOdd + b;
  return h;
}

std::shared_ptr<const QuantizedRows> QuantizedCache::get(const Parameters& p, int threads) {
  const std::uint64_t fingerprint = weights_fingerprint(p, threads);
  std::lock_guard<std::mutex> lock(mutex_);
  if (rows_ && fingerprint_ == fingerprint && rows_->rows == p.rows && rows_->width == p.cols) {
    ++hits_;
    return rows_;
  }
  ++misses_;
  rows_.reset();  // the old copy's memory goes before the new one is made (unless a caller holds it)
  rows_ = std::make_shared<const QuantizedRows>(quantize_rows(p, threads));
  fingerprint_ = fingerprint;
  return rows_;
}

// For weights w, scale sw, and sample h, step sh, with their quantized copies w^ and h^:
//   |w.h - w^.h^| <= sum |w| |h - h^| + sum |h^| |w - w^| <= |w|_1 sh / 2 + |h^|_1 sw / 2,
// so with the integer score a = q_w.q_h (w^.h^ = sw sh a), the bias c and the margin m,
//   upper = sw (a sh + m |h^|_1 / 2) + (c + m |w|_1 sh / 2),  lower = upper - 2 m (bound).
// A row is a candidate while its upper bound reaches the k-th best lower bound seen so far (a
// lower bound on the sample's k-th exact score, which only rises towards it).
bool quantized_top_k(const QuantizedRows& q, const Parameters& p, const float* hidden, std::size_t n,
                     std::vector<TopK>& best) {
  QuantizedSamples s;
  if (!q.finite || !quantize_samples(hidden, n, q.width, q.depth, s)) return false;
  const Kernels& kern = kernels();
  const int k = best.empty() ? 1 : best[0].capacity();
  std::vector<TopK> lower(n, TopK(k));
  std::vector<float> bar(n, -std::numeric_limits<float>::infinity());
  std::vector<std::vector<Candidate>> candidates(n);
  std::vector<std::size_t> prune_at(n, kPruneAt);
  std::vector<std::int32_t> integer(static_cast<std::size_t>(kRowsPerPass) * n);
  std::vector<float> upper(n);
  for (std::uint32_t j0 = 0; j0 < q.rows; j0 += kRowsPerPass) {
    const std::uint32_t rows = std::min(kRowsPerPass, q.rows - j0);
    kern.int8_scores(rows, n, q.depth, &q.weights[static_cast<std::size_t>(j0) * q.depth], s.bytes.data(),
                     integer.data(), n);
    for (std::uint32_t r = 0; r < rows; ++r) {
      const std::uint32_t row = j0 + r;
      const float sw = q.scale[row], row_term = kBoundMargin * q.l1[row];
      if (!kern.int8_upper(&integer[static_cast<std::size_t>(r) * n], n, s.step.data(), s.half_l1.data(),
                           s.half_step.data(), sw, p.bias[row], row_term, bar.data(), upper.data()))
        continue;
      for (std::size_t b = 0; b < n; ++b) {
        if (upper[b] < bar[b]) continue;
        const float bound = row_term * s.half_step[b] + sw * s.half_l1[b];
        candidates[b].push_back({row, upper[b]});
        lower[b].push(static_cast<std::int32_t>(row), upper[b] - 2.0f * bound);
        bar[b] = lower[b].threshold();
        if (candidates[b].size() < prune_at[b]) continue;
        auto& c = candidates[b];
        c.erase(std::remove_if(c.begin(), c.end(), [&](const Candidate& x) { return x.upper < bar[b]; }), c.end());
        prune_at[b] = std::max(kPruneAt, 2 * c.size());
      }
    }
  }
  for (std::size_t b = 0; b < n; ++b) {
    const float* h = hidden + b * q.width;
    for (const Candidate& c : candidates[b]) {
      if (c.upper < bar[b]) continue;
      best[b].push(static_cast<std::int32_t>(c.row), kern.dot(p.row(c.row), h, q.width) + p.bias[c.row]);
    }
  }
  return true;
}

}  // namespace slide
