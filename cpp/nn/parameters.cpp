#include "nn/parameters.h"

#include <omp.h>

#include <cmath>

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

std::size_t Parameters::memory_bytes() const {
  return (weight.size() + grad.size() + adam_m.size() + adam_v.size()) * sizeof(float) +
         (bias.size() + bias_grad.size() + bias_m.size() + bias_v.size()) * sizeof(float) + touched.size();
}

void Parameters::clear_gradients() {
  grad.fill_zero();
  bias_grad.fill_zero();  // empty without row bias
  touched.fill_zero();
}

void Parameters::update(const std::vector<std::uint32_t>* lists, std::size_t num_lists, const OptimizerConfig& opt,
                        float lr, std::int64_t step, float grad_scale, int threads) {
  const Kernels& k = kernels();
  AdamStep s{};
  if (opt.kind == OptimizerKind::kAdam) {
    const double t = static_cast<double>(step);
    s.lr = static_cast<float>(lr * std::sqrt(1.0 - std::pow(opt.beta2, t)) / (1.0 - std::pow(opt.beta1, t)));
    s.beta1 = opt.beta1;
    s.beta2 = opt.beta2;
    s.eps = opt.eps;
    s.grad_scale = grad_scale;
  }
  auto update_row = [&](std::uint32_t r) {
    float* w = row(r);
    float* g = grad_row(r);
    const std::size_t off = static_cast<std::size_t>(r) * stride;
    if (opt.kind == OptimizerKind::kAdam) {
      k.adam(w, adam_m.data() + off, adam_v.data() + off, g, cols, s);
      if (row_bias) k.adam(&bias[r], &bias_m[r], &bias_v[r], &bias_grad[r], 1, s);
    } else {
      k.sgd(w, g, cols, lr * grad_scale);
      if (row_bias) k.sgd(&bias[r], &bias_grad[r], 1, lr * grad_scale);
    }
    touched[r] = 0;
  };
  if (lists == nullptr) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t r = 0; r < static_cast<std::int64_t>(rows); ++r) update_row(static_cast<std::uint32_t>(r));
    return;
  }
  for (std::size_t l = 0; l < num_lists; ++l) {
    const std::vector<std::uint32_t>& list = lists[l];
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(list.size()); ++i) update_row(list[i]);
  }
}

}  // namespace slide
