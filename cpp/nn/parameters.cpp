#include "nn/parameters.h"

#include <atomic>
#include <cmath>
#include <cstring>

#include "common/parallel.h"

namespace slide {

Parameters::Parameters(std::uint32_t r, std::uint32_t c, OptimizerKind kind, bool with_row_bias)
    : rows(r), cols(c), row_bias(with_row_bias), stride(padded_stride(c)) {
  const std::size_t n = static_cast<std::size_t>(rows) * stride;
  const std::size_t nb = row_bias ? rows : 0;
  weight.resize(n);
  grad.resize(n);
  bias.resize(nb);
  bias_grad.resize(nb);
  touched.resize(rows);
  if (kind == OptimizerKind::kAdam) {
    adam_m.resize(n);
    adam_v.resize(n);
    bias_m.resize(nb);
    bias_v.resize(nb);
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
  return weight_bf16.size() * sizeof(bf16) + (weight.size() + grad.size() + adam_m.size() + adam_v.size()) * sizeof(float) +
         (bias.size() + bias_grad.size() + bias_m.size() + bias_v.size()) * sizeof(float) + touched.size();
}

void Parameters::clear_gradients() {
  grad.fill_zero();
  bias_grad.fill_zero();  // empty without row bias
  touched.fill_zero();
}

namespace {

AdamStep adam_step(const OptimizerConfig& opt, float lr, std::int64_t step, float grad_scale) {
  AdamStep s{};
  if (opt.kind != OptimizerKind::kAdam) return s;
  const double t = static_cast<double>(step);
  s.lr = static_cast<float>(lr * std::sqrt(1.0 - std::pow(opt.beta2, t)) / (1.0 - std::pow(opt.beta1, t)));
  s.beta1 = opt.beta1;
  s.beta2 = opt.beta2;
  s.eps = opt.eps;
  s.grad_scale = grad_scale;
  return s;
}

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

template <class RowOf>
static std::int64_t update_rows(Parameters& p, std::int64_t count, RowOf row_of, const OptimizerConfig& opt, float lr,
                        std::int64_t step, float grad_scale, int threads) {
  const Kernels& k = kernels();
  const AdamStep s = adam_step(opt, lr, step, grad_scale);
  std::atomic<std::int64_t> nonfinite{0};
  parallel_for(threads, count, [&](std::int64_t i) {
    const std::uint32_t r = row_of(i);
    const std::size_t off = static_cast<std::size_t>(r) * p.stride;
    if (opt.kind == OptimizerKind::kAdam) {
      k.adam(p.row(r), p.adam_m.data() + off, p.adam_v.data() + off, p.grad_row(r), p.cols, s);
      if (p.row_bias) k.adam(&p.bias[r], &p.bias_m[r], &p.bias_v[r], &p.bias_grad[r], 1, s);
    } else {
      k.sgd(p.row(r), p.grad_row(r), p.cols, lr * grad_scale);
      if (p.row_bias) k.sgd(&p.bias[r], &p.bias_grad[r], 1, lr * grad_scale);
    }
    p.touched[r] = 0;
    if (p.has_bf16()) k.to_bf16(p.row(r), p.weight_bf16.data() + off, p.cols);
    // Checked while the row is still in cache, so divergence is caught in the batch that causes it.
    // Adam's second moment is checked too: it overflows first, then silently freezes the row.
    if (has_nonfinite(p.row(r), p.cols) || (p.row_bias && !std::isfinite(p.bias[r])) ||
        (opt.kind == OptimizerKind::kAdam && has_nonfinite(p.adam_v.data() + off, p.cols)))
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
