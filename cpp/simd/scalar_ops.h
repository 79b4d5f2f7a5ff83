// The scalar kernel bodies: the reference level, and the tails of the wider levels. Compiled into
// each ISA file with that file's flags, so nothing here may assume more than baseline x86-64.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd/kernels.h"
#include "simd/window_layout.h"

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

inline void adagrad(float* w, float* acc, float* g, std::size_t n, float lr, float eps, float grad_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    const float gi = g[i] * grad_scale;
    acc[i] += gi * gi;
    w[i] -= lr * gi / (std::sqrt(acc[i]) + eps);
    g[i] = 0.0f;
  }
}

inline void sgd(float* w, float* g, std::size_t n, float lr_times_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    w[i] -= lr_times_scale * g[i];
    g[i] = 0.0f;
  }
}

// BF16 is the top half of an fp32. Rounding is to nearest even; NaN stays a (quiet) NaN; subnormal
// inputs and results become signed zero, exactly as AVX-512 BF16's vcvtneps2bf16 does, so every
// level converts bit-identically.
inline std::uint16_t to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((b >> 16) | 0x40u);
  if ((b & 0x7f800000u) == 0) return static_cast<std::uint16_t>((b >> 16) & 0x8000u);
  b += 0x7fffu + ((b >> 16) & 1u);  // overflow rounds to inf, as it should
  return static_cast<std::uint16_t>(b >> 16);
}

inline float from_bf16(std::uint16_t h) {
  const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

inline void to_bf16(const float* x, std::uint16_t* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = to_bf16(x[i]);
}

inline void from_bf16(const std::uint16_t* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = from_bf16(x[i]);
}

inline float dot_bf16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s += from_bf16(a[i]) * from_bf16(b[i]);
  return s;
}

inline void axpy_bf16(float a, const std::uint16_t* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * from_bf16(x[i]);
}

inline void gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const float* b,
                 std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
  for (std::size_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (!accumulate)
      for (std::size_t j = 0; j < n; ++j) ci[j] = 0.0f;
    for (std::size_t p = 0; p < k; ++p) {
      const float aip = a[i * lda + p];
      const float* bp = b + p * ldb;
      for (std::size_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
}

inline void int8_scores(std::size_t rows, std::size_t samples, std::size_t depth, const std::int8_t* w,
                        const std::uint8_t* h, std::int32_t* out, std::size_t ldo) {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t b = 0; b < samples; ++b) {
      std::int32_t s = 0;
      for (std::size_t j = 0; j < depth; ++j) s += static_cast<std::int32_t>(w[i * depth + j]) * h[b * depth + j];
      out[i * ldo + b] = s;
    }
}

// Each pair of products in the order vdpbf16ps adds them (the odd one first); both are exact.
inline void gemm_bf16(std::size_t m, std::size_t n, std::size_t k, const std::uint16_t* a, std::size_t lda,
                      const std::uint16_t* b, std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float s = accumulate ? c[i * ldc + j] : 0.0f;
      for (std::size_t p = 0; p + 1 < k; p += 2) {
        const std::uint16_t* pair = b + (p / 2) * ldb + 2 * j;
        s += from_bf16(a[i * lda + p + 1]) * from_bf16(pair[1]);
        s += from_bf16(a[i * lda + p]) * from_bf16(pair[0]);
      }
      c[i * ldc + j] = s;
    }
}

inline bool int8_upper(const std::int32_t* acc, std::size_t n, const float* step, const float* sample_term,
                       const float* half_step, float row_scale, float row_offset, float row_term, const float* bar,
                       float* upper) {
  bool hit = false;
  for (std::size_t b = 0; b < n; ++b) {
    upper[b] = row_scale * (static_cast<float>(acc[b]) * step[b] + sample_term[b]) + (row_offset + row_term * half_step[b]);
    hit |= !(upper[b] < bar[b]);
  }
  return hit;
}

// Rounds to nearest, ties to even, from exact steps alone (y - trunc(y) is exact below 2^23), so the
// floating-point rounding mode cannot move it, as the vector levels' explicit rounding cannot.
inline int nearest_even(float y) {
  const float whole = std::trunc(y), rest = y - whole;
  int q = static_cast<int>(whole);
  if (rest > 0.5f || (rest == 0.5f && (q & 1))) ++q;
  else if (rest < -0.5f || (rest == -0.5f && (q & 1))) --q;
  return q;
}

inline float int8_quantize(const float* w, std::size_t n, std::int8_t* out, float* l1) {
  float top = 0.0f, sum = 0.0f;
  for (std::size_t j = 0; j < n; ++j) {
    const float a = std::fabs(w[j]);
    top = a > top ? a : top;
    sum += a;
  }
  *l1 = sum;
  if (!std::isfinite(sum)) return top;
  const float inverse = top > 0.0f ? kInt8WeightMax / top : 0.0f;
  for (std::size_t j = 0; j < n; ++j) {
    const int q = nearest_even(w[j] * inverse);
    out[j] = static_cast<std::int8_t>(q < -kInt8WeightMax ? -kInt8WeightMax : (q > kInt8WeightMax ? kInt8WeightMax : q));
  }
  return top;
}

inline std::size_t add_bias_hits(float* s, std::size_t n, float bias, const float* bar, std::uint32_t* hits) {
  std::size_t count = 0;
  for (std::size_t b = 0; b < n; ++b) {
    s[b] += bias;
    if (!(s[b] < bar[b])) hits[count++] = static_cast<std::uint32_t>(b);
  }
  return count;
}

inline float max_value(const float* x, std::size_t n) {
  float m = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return x[i];
    m = x[i] > m ? x[i] : m;
  }
  return m;
}

inline float exp_sum(const float* x, float* y, std::size_t n, float shift) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

// Windows [first, windows) of the interleaved layout (the wider levels pass their tail here).
inline void wta(const float* x, const std::uint32_t* coords, std::size_t windows, std::size_t width, float skip,
                std::uint32_t* out, std::size_t first = 0) {
  for (std::size_t h = first; h < windows; ++h) {
    const std::uint32_t* c = coords + (h / kWindowGroup) * width * kWindowGroup + h % kWindowGroup;
    float best = -INFINITY;
    std::uint32_t arg = kNoWinner;
    // Branch-free: window winners are random, so a branch would mispredict constantly.
    for (std::size_t j = 0; j < width; ++j) {
      const float v = x[c[j * kWindowGroup]];
      const bool take = (v > best) & (v != skip);  // NaN != anything: a NaN skip skips nothing
      best = take ? v : best;
      arg = take ? static_cast<std::uint32_t>(j) : arg;
    }
    out[h] = arg;
  }
}

}  // namespace slide::scalar_ops
