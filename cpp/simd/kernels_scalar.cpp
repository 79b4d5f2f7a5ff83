#include <cmath>

#include "simd/kernels.h"

namespace slide {
namespace {

float dot(const float* a, const float* b, std::size_t n) {
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void adam(float* w, float* m, float* v, float* g, std::size_t n, const AdamStep& s) {
  for (std::size_t i = 0; i < n; ++i) {
    float gi = g[i] * s.grad_scale;
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * gi;
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * gi * gi;
    w[i] -= s.lr * m[i] / (std::sqrt(v[i]) + s.eps);
    g[i] = 0.0f;
  }
}

void sgd(float* w, float* g, std::size_t n, float lr_times_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    w[i] -= lr_times_scale * g[i];
    g[i] = 0.0f;
  }
}

}  // namespace

const Kernels& scalar_kernels() {
  static const Kernels k{SimdLevel::kScalar, "scalar", dot, axpy, adam, sgd};
  return k;
}

}  // namespace slide
