#include "train/inference.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/aligned_array.h"
#include "common/check.h"
#include "common/parallel.h"
#include "common/rng.h"
#include "simd/kernels.h"
#include "train/bf16_operands.h"
#include "train/parallel_rows.h"
#include "train/quantized_scan.h"
#include "train/top_k.h"

namespace slide {

namespace {

// Samples scored together: each weight row streams through once per block, so a larger block moves
// less memory (128: 3.8 s instead of 5.1 s with 32 for 2,000 points at 670,091 outputs, 2 threads).
constexpr std::int64_t kBlock = 128;
// Output rows per GEMM: their scores for the block (rows x 128 floats, 256 KB) stay in L2.
constexpr std::uint32_t kRowsPerPass = 512;

// The output layer's rows rounded to BF16 (row stride as the fp32 weights', padding zero), for a
// kBf16 scan where BF16 products are native; null otherwise. Rounded again on every call, since
// the weights may have changed since the last (rounding costs a small part of one scan), into the
// network's buffer: a new one each call cost more than the rounding, its pages' first touch (a
// validation scan of debian-rdeps' 57,489 outputs for 522 points took 59 ms, by cProfile).
const bf16* bf16_weights(Network& net, Scan scan) {
  const Kernels& kern = kernels();
  if (scan != Scan::kBf16 || !bf16_matmul_native(kern)) return nullptr;
  const Parameters& p = net.layers.back().params;
  AlignedArray<bf16>& out = net.scan_weights_bf16();
  const std::size_t size = static_cast<std::size_t>(p.rows) * p.stride;
  if (out.size() != size) out.resize(size);  // zeroed: the padding past each row's cols stays 0
  parallel_for(net.threads(), static_cast<std::int64_t>(p.rows), [&](std::int64_t r) {
    kern.to_bf16(p.row(static_cast<std::uint32_t>(r)), out.data() + static_cast<std::size_t>(r) * p.stride, p.cols);
  });
  return out.data();
}

// The output layer's scores for n samples' top hidden activations (`hidden`, n x h): GEMMs over
// slices of its rows (scores^T = W hidden^T), so every weight row streams through once; from
// `weights_bf16` (bf16_weights) and the activations rounded to BF16 when it is given. Writes
// each sample's top-k to ids/scores (row-major, k per sample). With `log_normalizer`, also each
// sample's log sum_j exp(score_j) over every output (a running max and sum per sample, block by
// block), so scores can become softmax probabilities.
void score_block(Network& net, const float* hidden, std::size_t n, int k, std::int32_t* ids, float* scores,
                 float* log_normalizer, const QuantizedRows* quantized, const bf16* weights_bf16) {
  const Kernels& kern = kernels();
  const Parameters& p = net.layers.back().params;
  const std::size_t h = p.cols;
  std::vector<TopK> best(n, TopK(k));
  if (quantized && quantized_top_k(*quantized, p, hidden, n, best)) {
    for (std::size_t b = 0; b < n; ++b) best[b].write(ids + b * k, scores + b * k);
    return;
  }
  std::vector<float> hidden_t;  // one column per sample
  std::vector<std::uint32_t> hidden_words;  // BF16 k-pairs, one column per sample
  const std::size_t words = (h + 1) / 2;
  if (weights_bf16) {
    std::vector<bf16> rounded(2 * words, bf16{0});
    hidden_words.resize(words * n);
    for (std::size_t b = 0; b < n; ++b) {
      kern.to_bf16(hidden + b * h, rounded.data(), h);
      scatter_row_words(rounded.data(), words, b, hidden_words.data(), n);
    }
  } else {
    hidden_t.resize(h * n);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t q = 0; q < h; ++q) hidden_t[q * n + b] = hidden[b * h + q];
  }
  std::vector<float> block(static_cast<std::size_t>(kRowsPerPass) * n);
  // Each sample's bar for a place in its top-k: almost every score is below it, so the scan
  // compares a row of scores with the bars in SIMD and looks at samples only when one reaches.
  std::vector<float> bar(n, -std::numeric_limits<float>::infinity());
  std::vector<std::uint32_t> hits(n);
  std::vector<float> run_max(log_normalizer ? n : 0, -std::numeric_limits<float>::infinity());
  std::vector<double> run_sum(log_normalizer ? n : 0, 0.0);
  std::vector<float> column(log_normalizer ? kRowsPerPass : 0);
  for (std::uint32_t j0 = 0; j0 < p.rows; j0 += kRowsPerPass) {
    const std::uint32_t rows = std::min(kRowsPerPass, p.rows - j0);
    if (weights_bf16)
      kern.gemm_bf16(rows, n, 2 * words, weights_bf16 + static_cast<std::size_t>(j0) * p.stride, p.stride,
                     reinterpret_cast<const bf16*>(hidden_words.data()), 2 * n, block.data(), n, false);
    else
      kern.gemm(rows, n, h, p.row(j0), p.stride, hidden_t.data(), n, block.data(), n, false);
    for (std::uint32_t r = 0; r < rows; ++r) {
      float* s = &block[static_cast<std::size_t>(r) * n];
      const std::size_t count = kern.add_bias_hits(s, n, p.bias[j0 + r], bar.data(), hits.data());
      for (std::size_t i = 0; i < count; ++i) {  // NaN scores are among the hits: TopK ranks them last
        const std::uint32_t b = hits[i];
        best[b].push(static_cast<std::int32_t>(j0 + r), s[b]);
        bar[b] = best[b].threshold();
      }
    }
    if (!log_normalizer) continue;
    for (std::size_t b = 0; b < n; ++b) {  // a sample's scores made contiguous for the SIMD max and exp-sum
      for (std::uint32_t r = 0; r < rows; ++r) column[r] = block[static_cast<std::size_t>(r) * n + b];
      const float m = std::max(run_max[b], kern.max_value(column.data(), rows));
      run_sum[b] = run_sum[b] * std::exp(static_cast<double>(run_max[b]) - m) +
                   static_cast<double>(kern.exp_sum(column.data(), column.data(), rows, m));
      run_max[b] = m;
    }
  }
  for (std::size_t b = 0; b < n; ++b) {
    best[b].write(ids + b * k, scores + b * k);
    if (log_normalizer) log_normalizer[b] = static_cast<float>(run_max[b] + std::log(run_sum[b]));
  }
}

// Exact scores for a block of rows of x: their hidden activations, then score_block.
void dense_block(Network& net, ThreadState& ts, const CsrFloat& x, std::int64_t begin, std::int64_t end, int k,
                 std::int32_t* ids, float* scores, float* log_normalizer, const QuantizedRows* quantized,
                 const bf16* weights_bf16) {
  const std::size_t h = net.layers.back().params.cols, n = static_cast<std::size_t>(end - begin);
  std::vector<float> hidden(n * h);  // one row per sample
  for (std::size_t b = 0; b < n; ++b) {
    const Activations& act = net.forward_hidden(ts, sample_at(x, nullptr, begin + static_cast<std::int64_t>(b)),
                                                Mode::kInferDense, ts.rng);
    std::copy(act.values.begin(), act.values.begin() + static_cast<std::ptrdiff_t>(h), hidden.begin() + b * h);
  }
  score_block(net, hidden.data(), n, k, ids + begin * k, scores + begin * k,
              log_normalizer ? log_normalizer + begin : nullptr, quantized, weights_bf16);
}

void sparse_one(Network& net, ThreadState& ts, const CsrFloat& x, std::int64_t row, int k, std::int32_t* ids,
                float* scores) {
  // Seeded by the row, so sparse predictions do not depend on threads or on earlier calls.
  Rng rng(mix64(net.config().seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(row + 1))));
  net.infer(ts, sample_at(x, nullptr, row), Mode::kInferSparse, k, rng);
  const Activations& out = ts.layers.back().out;
  TopK best(k);
  for (std::uint32_t p = 0; p < out.count; ++p) best.push(static_cast<std::int32_t>(out.id(p)), out.values[p]);
  best.write(ids + row * k, scores + row * k);
}

}  // namespace

namespace {

// The int8 scan's rows when it is asked for or pays (a wide layer, enough samples, no normaliser).
std::shared_ptr<const QuantizedRows> quantized_rows(Network& net, std::int64_t samples, bool normalizer,
                                                    Scan scan, QuantizedCache* cache) {
  const Parameters& p = net.layers.back().params;
  if (scan == Scan::kBf16 && bf16_matmul_native(kernels())) return nullptr;
  const bool int8 = !normalizer && (scan == Scan::kInt8 ||
                                    (scan != Scan::kFp32 && p.rows >= kQuantizedScanMinRows &&
                                     samples >= kQuantizedScanMinSamples));
  if (!int8) return nullptr;
  return cache ? cache->get(p, net.threads()) : std::make_shared<const QuantizedRows>(quantize_rows(p, net.threads()));
}

}  // namespace

Scan parse_scan(const std::string& name, bool normalizer) {
  SLIDE_REQUIRE(name == "auto" || name == "fp32" || name == "int8" || name == "bf16",
                "scan must be 'auto', 'fp32', 'int8' or 'bf16', got '" << name << "'");
  SLIDE_REQUIRE(!normalizer || name == "auto" || name == "fp32",
                "the softmax normaliser needs the fp32 scan, got scan='" << name << "'");
  return name == "fp32" ? Scan::kFp32 : name == "int8" ? Scan::kInt8 : name == "bf16" ? Scan::kBf16 : Scan::kAuto;
}

void predict_top_k(Network& net, const CsrFloat& x, int k, bool dense, std::int32_t* ids, float* scores,
                   float* log_normalizer, Scan scan, QuantizedCache* cache) {
  if (dense) {
    const auto quantized = quantized_rows(net, x.rows, log_normalizer != nullptr, scan, cache);
    const bf16* rounded = bf16_weights(net, scan);
    parallel_rows(net, x.rows, kBlock, [&](ThreadState& ts, std::int64_t b, std::int64_t e) {
      dense_block(net, ts, x, b, e, k, ids, scores, log_normalizer, quantized.get(), rounded);
    });
  } else {
    parallel_rows(net, x.rows, 16, [&](ThreadState& ts, std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r) sparse_one(net, ts, x, r, k, ids, scores);
    });
  }
}

void top_k_of_hidden(Network& net, const float* hidden, std::int64_t rows, int k, std::int32_t* ids, float* scores,
                     float* log_normalizer, Scan scan, QuantizedCache* cache) {
  const auto quantized = quantized_rows(net, rows, log_normalizer != nullptr, scan, cache);
  const bf16* rounded = bf16_weights(net, scan);
  const std::size_t h = net.layers.back().params.cols;
  parallel_rows(net, rows, kBlock, [&](ThreadState&, std::int64_t b, std::int64_t e) {
    score_block(net, hidden + b * h, static_cast<std::size_t>(e - b), k, ids + b * k, scores + b * k,
                log_normalizer ? log_normalizer + b : nullptr, quantized.get(), rounded);
  });
}

void hidden_representation(Network& net, const CsrFloat& x, float* out) {
  const std::size_t width = net.layers.back().params.cols;
  parallel_rows(net, x.rows, 64, [&](ThreadState& ts, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const Activations& h = net.forward_hidden(ts, sample_at(x, nullptr, r), Mode::kInferDense, ts.rng);
      std::copy(h.values.begin(), h.values.begin() + static_cast<std::ptrdiff_t>(width),
                out + static_cast<std::size_t>(r) * width);
    }
  });
}

double mean_loss(Network& net, const CsrFloat& x, const CsrIds& y) {
  std::vector<double> loss(net.threads(), 0.0);
  std::vector<std::int64_t> counted(net.threads(), 0);
  parallel_rows(net, x.rows, 16, [&](ThreadState& ts, std::int64_t b, std::int64_t e) {
    const int t = omp_get_thread_num();
    for (std::int64_t r = b; r < e; ++r) {
      SampleView s = sample_at(x, &y, r);
      if (s.num_labels == 0) continue;
      net.infer(ts, s, Mode::kInferDense, 0, ts.rng);
      loss[t] += net.loss_of(ts, s);
      ++counted[t];
    }
  });
  double total = 0.0;
  std::int64_t n = 0;
  for (int t = 0; t < net.threads(); ++t) {
    total += loss[t];
    n += counted[t];
  }
  return n ? total / n : 0.0;
}

}  // namespace slide
