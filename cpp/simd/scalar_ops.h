// The scalar kernel bodies: the reference level, and the tails of the wider levels. Compiled into
// each ISA file with that file's flags, so nothing here may assume more than baseline x86-64.
#pragma once
#include <cmath>
#include <cstddef>

#include "simd/kernels.h"

namespace slide::scalar_ops {

inline float dot(const float* a, const float* b, std::size_t n) {
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

inline void axpy(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

inline void adam(float* w, float* m, float* v, float* g, std::size_t n, const AdamStep& s) {
  for (std::size_t i = 0; i < n; ++i) {
    float gi = g[i] * s.grad_scale;
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * gi;
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * gi * gi;
    w[i] -= s.lr * m[i] / (std::sqrt(v[i]) + s.eps);
    g[i] = 0.0f;
  }
}

inline void sgd(float* w, float* g, std::size_t n, float lr_times_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    w[i] -= lr_times_scale * g[i];
    g[i] = 0.0f;
  }
}

}  // namespace slide::scalar_ops
