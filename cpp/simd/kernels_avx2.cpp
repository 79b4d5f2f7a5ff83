// Compiled with -mavx2 -mfma; only called after the CPU check in dispatch.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "simd/gemm_blocking.h"
#include "simd/int8_blocking.h"
#include "simd/kernels.h"
#include "simd/scalar_ops.h"

namespace slide {
namespace {

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

// Two accumulators over 8-lane fp32 vectors that `load` makes from a and b; `tail` does the rest.
template <class T, class Load, class Tail>
inline float dot_with(const T* a, const T* b, std::size_t n, Load load, Tail tail) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(load(a + i), load(b + i), acc0);
    acc1 = _mm256_fmadd_ps(load(a + i + 8), load(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load(a + i), load(b + i), acc0);
  return hsum(_mm256_add_ps(acc0, acc1)) + tail(a + i, b + i, n - i);
}

float dot(const float* a, const float* b, std::size_t n) {
  return dot_with(a, b, n, [](const float* p) { return _mm256_loadu_ps(p); },
                  [](const float* x, const float* y, std::size_t m) { return scalar_ops::dot(x, y, m); });
}

void axpy(float a, const float* x, float* y, std::size_t n) {
  __m256 va = _mm256_set1_ps(a);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  scalar_ops::axpy(a, x + i, y + i, n - i);
}

void adam(float* w, float* m, float* v, float* g, std::size_t n, const AdamStep& s) {
  const __m256 b1 = _mm256_set1_ps(s.beta1), b2 = _mm256_set1_ps(s.beta2);
  const __m256 c1 = _mm256_set1_ps(1.0f - s.beta1), c2 = _mm256_set1_ps(1.0f - s.beta2);
  const __m256 lr = _mm256_set1_ps(s.lr), eps = _mm256_set1_ps(s.eps);
  const __m256 sc = _mm256_set1_ps(s.grad_scale), zero = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), sc);
    __m256 mi = _mm256_fmadd_ps(b1, _mm256_loadu_ps(m + i), _mm256_mul_ps(c1, gi));
    __m256 vi = _mm256_fmadd_ps(b2, _mm256_loadu_ps(v + i), _mm256_mul_ps(c2, _mm256_mul_ps(gi, gi)));
    __m256 den = _mm256_add_ps(_mm256_sqrt_ps(vi), eps);
    __m256 wi = _mm256_sub_ps(_mm256_loadu_ps(w + i), _mm256_div_ps(_mm256_mul_ps(lr, mi), den));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(w + i, wi);
    _mm256_storeu_ps(g + i, zero);
  }
  scalar_ops::adam(w + i, m + i, v + i, g + i, n - i, s);
}

void adagrad(float* w, float* acc, float* g, std::size_t n, float lr, float eps, float grad_scale) {
  const __m256 vlr = _mm256_set1_ps(lr), veps = _mm256_set1_ps(eps);
  const __m256 sc = _mm256_set1_ps(grad_scale), zero = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), sc);
    const __m256 ai = _mm256_fmadd_ps(gi, gi, _mm256_loadu_ps(acc + i));
    const __m256 den = _mm256_add_ps(_mm256_sqrt_ps(ai), veps);
    _mm256_storeu_ps(w + i, _mm256_sub_ps(_mm256_loadu_ps(w + i), _mm256_div_ps(_mm256_mul_ps(vlr, gi), den)));
    _mm256_storeu_ps(acc + i, ai);
    _mm256_storeu_ps(g + i, zero);
  }
  scalar_ops::adagrad(w + i, acc + i, g + i, n - i, lr, eps, grad_scale);
}

void sgd(float* w, float* g, std::size_t n, float lr_times_scale) {
  const __m256 lr = _mm256_set1_ps(lr_times_scale), zero = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(w + i, _mm256_fnmadd_ps(lr, _mm256_loadu_ps(g + i), _mm256_loadu_ps(w + i)));
    _mm256_storeu_ps(g + i, zero);
  }
  scalar_ops::sgd(w + i, g + i, n - i, lr_times_scale);
}

// BF16 without hardware support: integer rounding (as scalar_ops::to_bf16), widening by shifting.
inline __m256i round_to_bf16(__m256 x) {
  const __m256i b = _mm256_castps_si256(x);
  const __m256i abs = _mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i sub = _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7f800000)), _mm256_setzero_si256());
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40)), nan);
  return _mm256_blendv_epi8(r, _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x8000)), sub);
}

inline __m256 widen(const bf16* x) {
  const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}

void to_bf16(const float* x, bf16* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i r = round_to_bf16(_mm256_loadu_ps(x + i));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_castsi256_si128(packed));
  }
  scalar_ops::to_bf16(x + i, y + i, n - i);
}

void from_bf16(const bf16* x, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, widen(x + i));
  scalar_ops::from_bf16(x + i, y + i, n - i);
}

float dot_bf16(const bf16* a, const bf16* b, std::size_t n) {
  return dot_with(a, b, n, widen,
                  [](const bf16* x, const bf16* y, std::size_t m) { return scalar_ops::dot_bf16(x, y, m); });
}

void axpy_bf16(float a, const bf16* x, float* y, std::size_t n) {
  const __m256 va = _mm256_set1_ps(a);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, widen(x + i), _mm256_loadu_ps(y + i)));
  scalar_ops::axpy_bf16(a, x + i, y + i, n - i);
}

// Lane masks for _mm256_maskload_ps: the first `n` of 8 lanes on.
inline __m256i lanes(std::size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Eight lanes of C or B: a plain load where the tile is 16 columns wide, a masked one where it is
// narrower. vmaskmovps costs little on Intel cores but is slow on AMD's Zen: masked B loads in
// the depth loop ran this GEMM at 6.6 G multiply-adds/s on a Zen 1 EPYC core (OpenBLAS 15-17),
// plain ones at 18 (benches/results/gemm_levels_avx2_zen1*.json).
template <bool kMasked>
inline __m256 load8(const float* p, __m256i mask) {
  if constexpr (kMasked) return _mm256_maskload_ps(p, mask);
  else return _mm256_loadu_ps(p);
}

template <bool kMasked>
inline void store8(float* p, __m256i mask, __m256 v) {
  if constexpr (kMasked) _mm256_maskstore_ps(p, mask, v);
  else _mm256_storeu_ps(p, v);
}

// An MR x 16 tile of C in 2*MR registers; masked loads and stores cover a narrower last tile.
template <int MR, bool kMasked>
void tile(std::size_t kc, const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
          std::size_t ldc, std::size_t cols, bool load_c) {
  const __m256i m0 = lanes(std::min<std::size_t>(cols, 8)), m1 = lanes(cols > 8 ? cols - 8 : 0);
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    c0[r] = load_c ? load8<kMasked>(c + r * ldc, m0) : _mm256_setzero_ps();
    c1[r] = load_c ? load8<kMasked>(c + r * ldc + 8, m1) : _mm256_setzero_ps();
  }
  for (std::size_t p = 0; p < kc; ++p) {
    const __m256 b0 = load8<kMasked>(b + p * ldb, m0);
    const __m256 b1 = load8<kMasked>(b + p * ldb + 8, m1);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r * lda + p);
      c0[r] = _mm256_fmadd_ps(ar, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(ar, b1, c1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    store8<kMasked>(c + r * ldc, m0, c0[r]);
    store8<kMasked>(c + r * ldc + 8, m1, c1[r]);
  }
}

template <int MR>
struct Tile {
  static void run(std::size_t kc, const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, std::size_t cols, bool load_c) {
    if (cols == 16) tile<MR, false>(kc, a, lda, b, ldb, c, ldc, cols, load_c);
    else tile<MR, true>(kc, a, lda, b, ldb, c, ldc, cols, load_c);
  }
};

void gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const float* b,
          std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
  gemm_blocking::run<16>(m, n, k, a, lda, b, ldb, c, ldc, accumulate,
                         [](int mr, std::size_t kc, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                            float* c, std::size_t ldc, std::size_t cols, bool load_c) {
                           gemm_blocking::dispatch_rows<Tile>(mr, kc, a, lda, b, ldb, c, ldc, cols, load_c);
                         });
}

// A tile of R weight rows against S samples, every accumulator in a register. maddubs multiplies
// byte pairs into 16-bit sums (at most 2 x 63 x 127), two of which still fit in 16 bits before
// madd widens them to 32.
template <int R, int S>
struct Int8Tile {
  static void run(std::size_t depth, const std::int8_t* w, const std::uint8_t* h, std::int32_t* out, std::size_t ldo) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[R][S];
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int b = 0; b < S; ++b) acc[r][b] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (std::size_t j = 0; j < depth; j += kInt8Depth) {
      __m256i lo[R], hi[R];
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        lo[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * depth + j));
        hi[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * depth + j + 32));
      }
#pragma GCC unroll 4
      for (int b = 0; b < S; ++b) {
        const __m256i h_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + b * depth + j));
        const __m256i h_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + b * depth + j + 32));
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) {
          const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(h_lo, lo[r]), _mm256_maddubs_epi16(h_hi, hi[r]));
          acc[r][b] = _mm256_add_epi32(acc[r][b], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
      if constexpr (S == 4) {
        const __m256i x = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[r][0], acc[r][1]), _mm256_hadd_epi32(acc[r][2], acc[r][3]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * ldo),
                         _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1)));
      } else {
        for (int b = 0; b < S; ++b) {
          const __m128i x = _mm_add_epi32(_mm256_castsi256_si128(acc[r][b]), _mm256_extracti128_si256(acc[r][b], 1));
          const __m128i y = _mm_hadd_epi32(x, x);
          out[r * ldo + b] = _mm_cvtsi128_si32(_mm_hadd_epi32(y, y));
        }
      }
    }
  }
};

void int8_scores(std::size_t rows, std::size_t samples, std::size_t depth, const std::int8_t* w,
                 const std::uint8_t* h, std::int32_t* out, std::size_t ldo) {
  int8_blocking::scores<Int8Tile, 2>(rows, samples, depth, w, h, out, ldo);
}

bool int8_upper(const std::int32_t* acc, std::size_t n, const float* step, const float* sample_term,
                const float* half_step, float row_scale, float row_offset, float row_term, const float* bar,
                float* upper) {
  const __m256 scale = _mm256_set1_ps(row_scale), offset = _mm256_set1_ps(row_offset), term = _mm256_set1_ps(row_term);
  __m256 reached = _mm256_setzero_ps();
  std::size_t b = 0;
  for (; b + 8 <= n; b += 8) {
    const __m256 a = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + b)));
    const __m256 inner = _mm256_fmadd_ps(a, _mm256_loadu_ps(step + b), _mm256_loadu_ps(sample_term + b));
    const __m256 u = _mm256_fmadd_ps(scale, inner, _mm256_fmadd_ps(term, _mm256_loadu_ps(half_step + b), offset));
    _mm256_storeu_ps(upper + b, u);
    reached = _mm256_or_ps(reached, _mm256_cmp_ps(u, _mm256_loadu_ps(bar + b), _CMP_NLT_UQ));
  }
  const bool tail = scalar_ops::int8_upper(acc + b, n - b, step + b, sample_term + b, half_step + b, row_scale,
                                           row_offset, row_term, bar + b, upper + b);
  return tail || _mm256_movemask_ps(reached) != 0;
}

// Eight weights at a time; a tail of fewer goes through a zero-padded copy, so every weight takes
// the vector path: a scalar tail compiled here could fuse the multiply into an add the scalar
// level rounds apart.
float int8_quantize(const float* w, std::size_t n, std::int8_t* out, float* l1) {
  const std::size_t whole = n / 8 * 8;
  float tail[8] = {};
  std::copy(w + whole, w + n, tail);
  const auto eights = [&](auto&& step) {  // step(j, the 8 weights from j)
    for (std::size_t j = 0; j < whole; j += 8) step(j, _mm256_loadu_ps(w + j));
    if (whole < n) step(whole, _mm256_loadu_ps(tail));
  };
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 top = _mm256_setzero_ps(), sum = _mm256_setzero_ps();
  eights([&](std::size_t, __m256 x) {
    const __m256 a = _mm256_and_ps(x, magnitude);
    top = _mm256_max_ps(top, a);
    sum = _mm256_add_ps(sum, a);
  });
  __m128 t = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
  t = _mm_max_ps(t, _mm_movehl_ps(t, t));
  t = _mm_max_ss(t, _mm_shuffle_ps(t, t, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
  const float most = _mm_cvtss_f32(t);
  *l1 = _mm_cvtss_f32(s4);
  if (!std::isfinite(*l1)) return most;
  const __m256 inverse = _mm256_set1_ps(most > 0.0f ? kInt8WeightMax / most : 0.0f);
  const __m256i low = _mm256_set1_epi32(-kInt8WeightMax), high = _mm256_set1_epi32(kInt8WeightMax);
  eights([&](std::size_t j, __m256 x) {
    const __m256 y = _mm256_round_ps(_mm256_mul_ps(x, inverse), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i q = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(y), low), high);
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes = _mm_packs_epi16(words, words);
    if (j < whole) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j), bytes);
    } else {  // the tail: only its n - whole bytes are the row's
      alignas(16) std::int8_t last[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(last), bytes);
      std::copy(last, last + (n - whole), out + j);
    }
  });
  return most;
}

std::size_t add_bias_hits(float* s, std::size_t n, float bias, const float* bar, std::uint32_t* hits) {
  const __m256 add = _mm256_set1_ps(bias);
  std::size_t count = 0, b = 0;
  for (; b + 8 <= n; b += 8) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(s + b), add);
    _mm256_storeu_ps(s + b, v);
    const __m256 reached = _mm256_cmp_ps(v, _mm256_loadu_ps(bar + b), _CMP_NLT_UQ);
    for (unsigned m = static_cast<unsigned>(_mm256_movemask_ps(reached)); m; m &= m - 1)
      hits[count++] = static_cast<std::uint32_t>(b + static_cast<std::size_t>(__builtin_ctz(m)));
  }
  const std::size_t tail = scalar_ops::add_bias_hits(s + b, n - b, bias, bar + b, hits + count);
  for (std::size_t i = count; i < count + tail; ++i) hits[i] += static_cast<std::uint32_t>(b);  // tail-relative
  return count + tail;
}

float max_value(const float* x, std::size_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    m = _mm256_max_ps(m, v);
  }
  if (_mm256_movemask_ps(nan)) return NAN;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = scalar_ops::max_value(x + i, n - i);
  if (std::isnan(best)) return best;
  for (float v : lanes) best = v > best ? v : best;
  return best;
}

// As the AVX-512 level, but 2^n is built in the exponent bits, as 2^(n/2) * 2^(n - n/2) so that
// n = 128 (x near 88.7) stays finite; the ends are set afterwards (inf above, zero below).
inline __m256 exp_ps(__m256 x) {
  const __m256 big = _mm256_cmp_ps(x, _mm256_set1_ps(88.7228f), _CMP_GT_OQ);
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3365f), _CMP_LT_OQ);
  const __m256 xc = _mm256_min_ps(_mm256_set1_ps(88.7228f), _mm256_max_ps(_mm256_set1_ps(-87.3365f), x));  // NaN passes
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 e2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, e1), e2);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), big);
  return _mm256_andnot_ps(tiny, y);
}

float exp_sum(const float* x, float* y, std::size_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  return hsum(acc) + scalar_ops::exp_sum(x + i, y + i, n - i, shift);
}

// Each group of 16 windows as two registers of 8; the last partial group goes to the scalar body.
void wta(const float* x, std::size_t, const std::uint32_t* coords, std::size_t windows, std::size_t width,
         float skip, std::uint32_t* out) {
  const __m256 vskip = _mm256_set1_ps(skip);
  std::size_t h = 0;
  for (; h + 16 <= windows; h += 16)
    for (std::size_t half = 0; half < 16; half += 8) {
      const std::uint32_t* c = coords + h * width + half;
      __m256 best = _mm256_set1_ps(-INFINITY);
      __m256i arg = _mm256_set1_epi32(static_cast<int>(kNoWinner));
      for (std::size_t j = 0; j < width; ++j) {
        const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + j * 16));
        const __m256 v = _mm256_i32gather_ps(x, idx, 4);
        const __m256 take = _mm256_and_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, vskip, _CMP_NEQ_UQ));
        best = _mm256_blendv_ps(best, v, take);
        arg = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(arg),
                                                   _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(j))), take));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + h + half), arg);
    }
  scalar_ops::wta(x, coords, windows, width, skip, out, h);
}

}  // namespace

const Kernels& avx2_kernels() {
  static const Kernels k{SimdLevel::kAvx2, "avx2", dot, axpy, adam, sgd, adagrad, to_bf16, from_bf16, dot_bf16, axpy_bf16, gemm, max_value, exp_sum, wta, int8_scores, int8_upper,
                         scalar_kernels().gemm_bf16, add_bias_hits, int8_quantize};
  return k;
}

}  // namespace slide
