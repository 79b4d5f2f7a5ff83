#include "train/inference.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "common/rng.h"
#include "simd/kernels.h"
#include "train/parallel_rows.h"
#include "train/top_k.h"

namespace slide {

namespace {

constexpr std::int64_t kBlock = 32;

// Exact scores for a block of samples: hidden activations first, then each output row is
// streamed once and scored against every sample of the block.
void dense_block(Network& net, ThreadState& ts, const CsrFloat& x, std::int64_t begin, std::int64_t end, int k,
                 std::int32_t* ids, float* scores) {
  const Kernels& kern = kernels();
  FcLayer& out = net.layers.back();
  const std::uint32_t h = out.params.cols;
  const std::size_t stride = out.params.stride;
  const std::int64_t n = end - begin;
  std::vector<float> hidden(static_cast<std::size_t>(n) * stride, 0.0f);
  for (std::int64_t b = 0; b < n; ++b) {
    SampleView s = sample_at(x, nullptr, begin + b);
    net.input.forward(s, ts.hidden0);
    const Activations* in = &ts.hidden0;
    for (std::size_t i = 0; i + 1 < net.layers.size(); ++i) {
      net.layers[i].forward(*in, ts.layers[i], Mode::kInferDense, nullptr, 0, NegativePool{}, 0, ts.rng);
      in = &ts.layers[i].out;
    }
    std::copy(in->values.begin(), in->values.begin() + h, hidden.begin() + b * stride);
  }
  std::vector<TopK> best(static_cast<std::size_t>(n), TopK(k));
  for (std::uint32_t j = 0; j < out.params.rows; ++j) {
    const float* w = out.params.row(j);
    const float bias = out.params.bias[j];
    for (std::int64_t b = 0; b < n; ++b) best[b].push(static_cast<std::int32_t>(j), bias + kern.dot(w, &hidden[b * stride], h));
  }
  for (std::int64_t b = 0; b < n; ++b) best[b].write(ids + (begin + b) * k, scores + (begin + b) * k);
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

void predict_top_k(Network& net, const CsrFloat& x, int k, bool dense, std::int32_t* ids, float* scores) {
  if (dense) {
    parallel_rows(net, x.rows, kBlock, [&](ThreadState& ts, std::int64_t b, std::int64_t e) {
      dense_block(net, ts, x, b, e, k, ids, scores);
    });
  } else {
    parallel_rows(net, x.rows, 16, [&](ThreadState& ts, std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r) sparse_one(net, ts, x, r, k, ids, scores);
    });
  }
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
