#include "nn/parameters.h"

#include <atomic>
#include <cmath>
#include <cstring>

#include "common/parallel.h"

namespace slide {

Parameters::Parameters(std::uint32_t r, std::uint32_t c, OptimizerKind kind, bool with_row_bias,
                       bool deferred_gradients)
    : rows(r), cols(c), row_bias(with_row_bias), stride(padded_stride(c)), kind(kind) {
  const std::size_t n = static_cast<std::size_t>(rows) * stride;
  const std::size_t nb = row_bias ? rows : 0;
  weight.resize(n);
  if (!deferred_gradients) grad.resize(n);
  bias.resize(nb);
  bias_grad.resize(nb);
  touched.resize(rows);
  const std::size_t slots = state_names(kind).size();
  state.resize(slots);
  bias_state.resize(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    state[i].resize(n);
    bias_state[i].resize(nb);
  }
}

void Parameters::enable_bf16(int threads) {
  weight_bf16.resize(static_cast<std::size_t>(rows) * stride);
  sync_bf16(threads);
}

void Parameters::sync_bf16(int threads) {
  if (!has_bf16()) return;
  const Kernels& k = kernels();
  parallel_for(threads, static_cast<std::int64_t>(rows), [&](std::int64_t r) {
    k.to_bf16(row(static_cast<std::uint32_t>(r)), weight_bf16.data() + static_cast<std::size_t>(r) * stride, cols);
  });
}

std::size_t Parameters::memory_bytes() const {
  std::size_t floats = weight.size() + grad.size() + bias.size() + bias_grad.size();
  for (std::size_t i = 0; i < state.size(); ++i) floats += state[i].size() + bias_state[i].size();
  return weight_bf16.size() * sizeof(bf16) + floats * sizeof(float) + touched.size();
}

void Parameters::clear_gradients() {
  grad.fill_zero();
  bias_grad.fill_zero();  // empty without row bias
  touched.fill_zero();
}

namespace {

// Any NaN or inf among x[0..n): an all-ones exponent. Integer OR-reduction, so it vectorises.
bool has_nonfinite(const float* x, std::size_t n) {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad != 0;
}

}  // namespace

bool Parameters::step_row(const OptimizerStep& s, const Kernels& k, std::uint32_t r, float* g, float* bias_g) {
  const std::size_t off = static_cast<std::size_t>(r) * stride, slots = state.size();
  float* row_state[2];
  float* row_bias_state[2];
  for (std::size_t j = 0; j < slots; ++j) {
    row_state[j] = state[j].data() + off;
    if (row_bias) row_bias_state[j] = bias_state[j].data() + r;
  }
  s.apply(k, row(r), row_state, g, cols);
  if (row_bias) s.apply(k, &bias[r], row_bias_state, bias_g, 1);
  if (has_bf16()) k.to_bf16(row(r), weight_bf16.data() + off, cols);
  // Checked while the row is still in cache, so divergence is caught in the batch that causes it.
  // The last state array (Adam's second moment, Adagrad's sum of squares) is checked too: it
  // overflows first, then silently freezes the row.
  return has_nonfinite(row(r), cols) || (row_bias && !std::isfinite(bias[r])) ||
         (slots && has_nonfinite(row_state[slots - 1], cols));
}

template <class RowOf>
static std::int64_t update_rows(Parameters& p, std::int64_t count, RowOf row_of, const OptimizerConfig& opt, float lr,
                        std::int64_t step, float grad_scale, int threads) {
  const Kernels& k = kernels();
  const OptimizerStep s(opt, lr, step, grad_scale);
  std::atomic<std::int64_t> nonfinite{0};
  parallel_for(threads, count, [&](std::int64_t i) {
    const std::uint32_t r = row_of(i);
    p.touched[r] = 0;
    if (p.step_row(s, k, r, p.grad_row(r), p.row_bias ? &p.bias_grad[r] : nullptr))
      nonfinite.fetch_add(1, std::memory_order_relaxed);
  });
  return nonfinite.load();
}

std::int64_t Parameters::update(const std::vector<const std::vector<std::uint32_t>*>& lists,
                                const OptimizerConfig& opt, float lr, std::int64_t step, float grad_scale,
                                int threads) {
  std::int64_t nonfinite = 0;
  for (const std::vector<std::uint32_t>* list : lists)
    nonfinite += update_rows(*this, static_cast<std::int64_t>(list->size()), [list](std::int64_t i) { return (*list)[i]; }, opt,
                             lr, step, grad_scale, threads);
  return nonfinite;
}

std::int64_t Parameters::update_all(const OptimizerConfig& opt, float lr, std::int64_t step, float grad_scale,
                                    int threads) {
  return update_rows(*this, rows, [](std::int64_t i) { return static_cast<std::uint32_t>(i); }, opt, lr, step, grad_scale,
              threads);
}

}  // namespace slide
