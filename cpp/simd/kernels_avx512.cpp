// Compiled with -mavx512f (+bw/dq/vl); only called after the CPU and OS checks in dispatch.cpp.
// Tails use masked loads, so no length needs padding.
#include <immintrin.h>

#include <cmath>

#include "simd/avx512_tile.h"
#include "simd/kernels.h"

namespace slide {
namespace {

inline __mmask16 tail_mask(std::size_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

float dot(const float* a, const float* b, std::size_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), acc1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void axpy(float a, const float* x, float* y, std::size_t n) {
  __m512 va = _mm512_set1_ps(a);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 r = _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i));
    _mm512_mask_storeu_ps(y + i, k, r);
  }
}

inline void adam_block(float* w, float* m, float* v, float* g, __mmask16 k, const AdamStep& s) {
  const __m512 b1 = _mm512_set1_ps(s.beta1), b2 = _mm512_set1_ps(s.beta2);
  const __m512 c1 = _mm512_set1_ps(1.0f - s.beta1), c2 = _mm512_set1_ps(1.0f - s.beta2);
  __m512 gi = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g), _mm512_set1_ps(s.grad_scale));
  __m512 mi = _mm512_fmadd_ps(b1, _mm512_maskz_loadu_ps(k, m), _mm512_mul_ps(c1, gi));
  __m512 vi = _mm512_fmadd_ps(b2, _mm512_maskz_loadu_ps(k, v), _mm512_mul_ps(c2, _mm512_mul_ps(gi, gi)));
  __m512 den = _mm512_add_ps(_mm512_sqrt_ps(vi), _mm512_set1_ps(s.eps));
  __m512 step = _mm512_div_ps(_mm512_mul_ps(_mm512_set1_ps(s.lr), mi), den);
  __m512 wi = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, w), step);
  _mm512_mask_storeu_ps(m, k, mi);
  _mm512_mask_storeu_ps(v, k, vi);
  _mm512_mask_storeu_ps(w, k, wi);
  _mm512_mask_storeu_ps(g, k, _mm512_setzero_ps());
}

void adam(float* w, float* m, float* v, float* g, std::size_t n, const AdamStep& s) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) adam_block(w + i, m + i, v + i, g + i, 0xFFFF, s);
  if (i < n) adam_block(w + i, m + i, v + i, g + i, tail_mask(n - i), s);
}

void adagrad(float* w, float* acc, float* g, std::size_t n, float lr, float eps, float grad_scale) {
  const __m512 vlr = _mm512_set1_ps(lr), veps = _mm512_set1_ps(eps), sc = _mm512_set1_ps(grad_scale);
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    const __m512 gi = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g + i), sc);
    const __m512 ai = _mm512_fmadd_ps(gi, gi, _mm512_maskz_loadu_ps(k, acc + i));
    const __m512 den = _mm512_add_ps(_mm512_sqrt_ps(ai), veps);
    const __m512 wi = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, w + i), _mm512_div_ps(_mm512_mul_ps(vlr, gi), den));
    _mm512_mask_storeu_ps(acc + i, k, ai);
    _mm512_mask_storeu_ps(w + i, k, wi);
    _mm512_mask_storeu_ps(g + i, k, _mm512_setzero_ps());
  }
}

void sgd(float* w, float* g, std::size_t n, float lr_times_scale) {
  const __m512 lr = _mm512_set1_ps(lr_times_scale);
  std::size_t i = 0;
  for (; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    __m512 wi = _mm512_fnmadd_ps(lr, _mm512_maskz_loadu_ps(k, g + i), _mm512_maskz_loadu_ps(k, w + i));
    _mm512_mask_storeu_ps(w + i, k, wi);
    _mm512_mask_storeu_ps(g + i, k, _mm512_setzero_ps());
  }
}

// BF16 without the BF16 extension: integer rounding (as scalar_ops::to_bf16), widening by shifting.
inline __m256i round_to_bf16(__m512 x) {
  const __m512i b = _mm512_castps_si512(x);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __mmask16 sub = _mm512_testn_epi32_mask(b, _mm512_set1_epi32(0x7f800000));
  const __m512i hi = _mm512_srli_epi32(b, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
  r = _mm512_mask_mov_epi32(r, sub, _mm512_and_si512(hi, _mm512_set1_epi32(0x8000)));
  return _mm512_cvtepi32_epi16(r);
}

inline __m512 widen(const bf16* x, __mmask16 k) {
  const __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, x));
  return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
}

void to_bf16(const float* x, bf16* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, k, round_to_bf16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

void from_bf16(const bf16* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, widen(x + i, k));
  }
}

float dot_bf16(const bf16* a, const bf16* b, std::size_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(widen(a + i, 0xFFFF), widen(b + i, 0xFFFF), acc0);
    acc1 = _mm512_fmadd_ps(widen(a + i + 16, 0xFFFF), widen(b + i + 16, 0xFFFF), acc1);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    acc0 = _mm512_fmadd_ps(widen(a + i, k), widen(b + i, k), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void axpy_bf16(float a, const bf16* x, float* y, std::size_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_fmadd_ps(va, widen(x + i, k), _mm512_maskz_loadu_ps(k, y + i)));
  }
}

// fp32: one broadcast float of A times 16 of B per FMA.
struct FmaStep {
  using T = float;
  static __m512 load(__mmask16 m, const float* b) { return _mm512_maskz_loadu_ps(m, b); }
  static __m512 broadcast(float a) { return _mm512_set1_ps(a); }
  static __m512 madd(__m512 acc, __m512 a, __m512 b) { return _mm512_fmadd_ps(a, b, acc); }
};

void gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const float* b,
          std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
  Avx512Tile<FmaStep>::gemm(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

// Sixteen weights at a time, the tail masked: no scalar code, which could round differently here.
float int8_quantize(const float* w, std::size_t n, std::int8_t* out, float* l1) {
  __m512 top = _mm512_setzero_ps(), sum = _mm512_setzero_ps();
  for (std::size_t j = 0; j < n; j += 16) {
    const __mmask16 k = n - j >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - j);
    const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(k, w + j));
    top = _mm512_max_ps(top, a);
    sum = _mm512_add_ps(sum, a);
  }
  const float most = _mm512_reduce_max_ps(top);
  *l1 = _mm512_reduce_add_ps(sum);
  if (!std::isfinite(*l1)) return most;
  const __m512 inverse = _mm512_set1_ps(most > 0.0f ? kInt8WeightMax / most : 0.0f);
  const __m512i low = _mm512_set1_epi32(-kInt8WeightMax), high = _mm512_set1_epi32(kInt8WeightMax);
  for (std::size_t j = 0; j < n; j += 16) {
    const __mmask16 k = n - j >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - j);
    const __m512 y = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w + j), inverse);
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(
        _mm512_cvt_roundps_epi32(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), low), high);
    _mm512_mask_cvtepi32_storeu_epi8(out + j, k, q);
  }
  return most;
}

std::size_t add_bias_hits(float* s, std::size_t n, float bias, const float* bar, std::uint32_t* hits) {
  const __m512 add = _mm512_set1_ps(bias);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  std::size_t count = 0;
  for (std::size_t b = 0; b < n; b += 16) {
    const __mmask16 k = n - b >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - b);
    const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, s + b), add);
    _mm512_mask_storeu_ps(s + b, k, v);
    const __mmask16 reached = _mm512_mask_cmp_ps_mask(k, v, _mm512_maskz_loadu_ps(k, bar + b), _CMP_NLT_UQ);
    if (!reached) continue;
    _mm512_mask_compressstoreu_epi32(hits + count, reached,
                                     _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(b))));
    count += static_cast<std::size_t>(__builtin_popcount(reached));
  }
  return count;
}

float max_value(const float* x, std::size_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  __mmask16 nan = 0;
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    nan |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
    m = _mm512_mask_max_ps(m, k, m, v);
  }
  return nan ? NAN : _mm512_reduce_max_ps(m);
}

// exp(x) = 2^n * exp(r), r = x - n ln2 in [-ln2/2, ln2/2], exp(r) by Cephes' expf polynomial;
// vscalefps applies 2^n with the right overflow to inf and underflow to zero.
inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));  // NaN passes
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

float exp_sum(const float* x, float* y, std::size_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 acc = _mm512_setzero_ps();
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), s));
    _mm512_mask_storeu_ps(y + i, k, e);
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

// Entry j of 16 windows at once, by `Fetch` (a gather, or a permute of x held in registers).
template <class Fetch>
void wta_windows(Fetch fetch, const std::uint32_t* coords, std::size_t windows, std::size_t width, float skip,
                 std::uint32_t* out) {
  const __m512 vskip = _mm512_set1_ps(skip);
  for (std::size_t h = 0; h < windows; h += 16, coords += width * 16) {
    __m512 best = _mm512_set1_ps(-INFINITY);
    __m512i arg = _mm512_set1_epi32(static_cast<int>(kNoWinner));
    for (std::size_t j = 0; j < width; ++j) {
      const __m512 v = fetch(_mm512_loadu_si512(coords + j * 16));
      const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) & _mm512_cmp_ps_mask(v, vskip, _CMP_NEQ_UQ);
      best = _mm512_mask_mov_ps(best, take, v);
      arg = _mm512_mask_mov_epi32(arg, take, _mm512_set1_epi32(static_cast<int>(j)));
    }
    _mm512_mask_storeu_epi32(out + h, windows - h >= 16 ? 0xFFFF : tail_mask(windows - h), arg);
  }
}

// x of at most 32 * Pairs floats held in 2 * Pairs registers; a coordinate's low five bits pick
// within a pair (one two-register permute), its higher bits pick the pair.
template <int Pairs>
void wta_in_registers(const float* x, std::size_t dim, const std::uint32_t* coords, std::size_t windows,
                      std::size_t width, float skip, std::uint32_t* out) {
  __m512 r[2 * Pairs];
  for (int i = 0; i < 2 * Pairs; ++i) {
    const std::size_t at = 16 * static_cast<std::size_t>(i);
    r[i] = at >= dim ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(dim - at >= 16 ? 0xFFFF : tail_mask(dim - at), x + at);
  }
  wta_windows(
      [&](__m512i idx) {
        __m512 v = _mm512_permutex2var_ps(r[0], idx, r[1]);
        for (int p = 1; p < Pairs; ++p) {
          const __mmask16 in_pair = _mm512_cmpeq_epi32_mask(_mm512_srli_epi32(idx, 5), _mm512_set1_epi32(p));
          v = _mm512_mask_mov_ps(v, in_pair, _mm512_permutex2var_ps(r[2 * p], idx, r[2 * p + 1]));
        }
        return v;
      },
      coords, windows, width, skip, out);
}

// 16 windows per register. A vector of up to 128 floats (every hidden width SLIDE's presets use)
// stays in registers and is permuted, 3.3x faster than gathering from L1 on the AVX-512 host; a
// longer one is gathered.
void wta(const float* x, std::size_t dim, const std::uint32_t* coords, std::size_t windows, std::size_t width,
         float skip, std::uint32_t* out) {
  if (dim <= 32) return wta_in_registers<1>(x, dim, coords, windows, width, skip, out);
  if (dim <= 64) return wta_in_registers<2>(x, dim, coords, windows, width, skip, out);
  if (dim <= 128) return wta_in_registers<4>(x, dim, coords, windows, width, skip, out);
  wta_windows([x](__m512i idx) { return _mm512_i32gather_ps(idx, x, 4); }, coords, windows, width, skip, out);
}

}  // namespace

const Kernels& avx512_kernels() {
  // The AVX2 int8 kernels serve here; avx512_bf16, whose CPUs all have VNNI, has its own.
  static const Kernels k{SimdLevel::kAvx512, "avx512", dot, axpy, adam, sgd, adagrad, to_bf16, from_bf16,
                         dot_bf16, axpy_bf16, gemm, max_value, exp_sum, wta, avx2_kernels().int8_scores,
                         avx2_kernels().int8_upper, scalar_kernels().gemm_bf16, add_bias_hits, int8_quantize};
  return k;
}

}  // namespace slide
