#include "nn/input_layer.h"

#include <algorithm>

#include "simd/kernels.h"

namespace slide {

InputLayer::InputLayer(std::uint32_t features, std::uint32_t hidden, OptimizerKind kind)
    : table(features, hidden, kind, /*row_bias=*/false), bias(1, hidden, kind, /*row_bias=*/false) {}

void InputLayer::forward(const SampleView& s, Activations& out) const {
  const Kernels& k = kernels();
  const std::uint32_t h = table.cols;
  out.set_dense(h);
  float* v = out.values.data();
  std::copy(bias.row(0), bias.row(0) + h, v);
  if (table.has_bf16()) {
    for (int i = 0; i < s.num_features; ++i) k.axpy_bf16(s.feature_values[i], table.row_bf16(s.feature_ids[i]), v, h);
  } else {
    for (int i = 0; i < s.num_features; ++i) k.axpy(s.feature_values[i], table.row(s.feature_ids[i]), v, h);
  }
  for (std::uint32_t j = 0; j < h; ++j) v[j] = v[j] > 0.0f ? v[j] : 0.0f;
}

void InputLayer::backward(const SampleView& s, const float* delta, std::vector<std::uint32_t>& touched) {
  const Kernels& k = kernels();
  const std::uint32_t h = table.cols;
  for (int i = 0; i < s.num_features; ++i) {
    std::uint32_t f = static_cast<std::uint32_t>(s.feature_ids[i]);
    if (table.claim(f)) touched.push_back(f);
    k.axpy(s.feature_values[i], delta, table.grad_row(f), h);
  }
  k.axpy(1.0f, delta, bias.grad_row(0), h);
}

}  // namespace slide
