#include "train/external_output.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "common/aligned_array.h"
#include "common/check.h"
#include "common/parallel.h"
#include "optim/optimizer.h"
#include "simd/kernels.h"
#include "train/output_batch.h"

namespace slide {

namespace {

// Staged rows whose weights and optimizer state the step requests ahead of stepping them: they lie
// at random in the layer, where the hardware prefetcher cannot guess them (the step's median batch
// at 670,091 outputs took 2-3% less with it).
constexpr std::size_t kAhead = 4;

void prefetch_row(const Parameters& p, std::uint32_t j) {
  const std::size_t off = static_cast<std::size_t>(j) * p.stride;
  for (std::size_t c = 0; c < p.cols; c += 16) {  // one 64-byte line each
    __builtin_prefetch(p.weight.data() + off + c, 1);
    for (const AlignedArray<float>& state : p.state) __builtin_prefetch(state.data() + off + c, 1);
  }
}

// Whether the output layer's accumulators hold gradient a step has not taken yet.
bool accumulated(Network& net) {
  for (int t = 0; t < net.threads(); ++t)
    if (!net.state(t).layers.back().touched.empty()) return true;
  return false;
}

// The staged compact batch's gradients into the layer's accumulators, claimed for the step as the
// plain path claims them.
void accumulate_staged(Network& net) {
  BatchWorkspace& w = net.batch_workspace();
  FcLayer& out = net.layers.back();
  const Kernels& k = kernels();
  const std::size_t ldh = padded_stride(out.params.cols);
  std::vector<std::uint32_t>& touched = net.state(0).layers.back().touched;
  out.params.ensure_gradients();
  for (std::size_t n = 0; n < w.staged_ids.size(); ++n)
    out.accumulate_gathered_row(k, w.staged_ids[n], &w.staged_grad[n * ldh], w.staged_bias_grad[n], touched);
  w.staged_ids.clear();
}

}  // namespace

BatchStats external_output_gradients(Network& net, const float* hidden, std::size_t rows, const CsrIds& y,
                                     float* hidden_delta, bool compact) {
  SLIDE_REQUIRE(!net.collective(), "an output layer trained from outside runs in one process");
  BatchWorkspace& w = net.batch_workspace();
  const std::size_t K = net.layers.back().params.cols, ldh = padded_stride(K);
  w.rows.clear();
  for (std::size_t r = 0; r < rows; ++r)  // a row without labels has nothing to learn
    if (y.indptr[r + 1] > y.indptr[r]) w.rows.push_back(static_cast<std::int64_t>(r));
  const std::size_t B = w.rows.size();
  w.hidden.assign(B * ldh, 0.0f);
  w.label_ptr.assign(1, 0);
  w.labels.clear();
  for (std::size_t b = 0; b < B; ++b) {
    const std::int64_t r = w.rows[b];
    std::memcpy(&w.hidden[b * ldh], hidden + static_cast<std::size_t>(r) * K, K * sizeof(float));
    for (std::int64_t q = y.indptr[r]; q < y.indptr[r + 1]; ++q)
      w.labels.push_back(static_cast<std::uint32_t>(y.indices[q]));
    w.label_ptr.push_back(static_cast<std::int64_t>(w.labels.size()));
  }
  const bool waiting = !w.staged_ids.empty();
  if (waiting && B) accumulate_staged(net);  // a second batch before the step: the two are summed
  const bool keep_compact = compact && !waiting && !accumulated(net);
  const BatchStats stats = output_batch_gradients(net, B, nullptr, keep_compact);
  if (w.compact_rows && stats.samples) {  // the buffers trade places, so nothing is copied or allocated
    std::swap(w.weight_grad, w.staged_grad);
    std::swap(w.bias_grad, w.staged_bias_grad);
    const std::vector<std::uint32_t>& ids = w.active->ids();
    w.staged_ids.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(w.compact_rows));
  }
  std::fill(hidden_delta, hidden_delta + rows * K, 0.0f);
  if (stats.samples)
    for (std::size_t b = 0; b < B; ++b)
      std::memcpy(hidden_delta + static_cast<std::size_t>(w.rows[b]) * K, &w.hidden_delta[b * ldh], K * sizeof(float));
  return stats;
}

std::int64_t external_output_step(Network& net, float lr, std::int64_t samples, float gradient_scale) {
  BatchWorkspace& w = net.batch_workspace();
  if (w.staged_ids.empty()) return net.apply_updates(lr, samples, gradient_scale);
  if (samples <= 0) return 0;
  // Network::apply_updates' step for the one layer that has gradient; the engine's input and
  // hidden layers never run here.
  ++net.step;
  net.samples_seen += samples;
  FcLayer& out = net.layers.back();
  Parameters& p = out.params;
  const Kernels& k = kernels();
  const std::size_t ldh = padded_stride(p.cols);
  const OptimizerStep s(net.config().optimizer, lr, net.step, gradient_scale / static_cast<float>(samples));
  std::atomic<std::int64_t> nonfinite{0};
  const std::size_t S = w.staged_ids.size();
  parallel_for(net.threads(), static_cast<std::int64_t>(S), [&](std::int64_t i) {
    const std::size_t n = static_cast<std::size_t>(i);
    if (n + kAhead < S) prefetch_row(p, w.staged_ids[n + kAhead]);
    if (out.step_gathered_row(s, k, w.staged_ids[n], &w.staged_grad[n * ldh], &w.staged_bias_grad[n]))
      nonfinite.fetch_add(1, std::memory_order_relaxed);
  });
  w.staged_ids.clear();
  return nonfinite.load();
}

}  // namespace slide
