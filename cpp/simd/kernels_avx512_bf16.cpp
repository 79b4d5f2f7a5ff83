// Compiled with -mavx512f/bw/dq/vl -mavx512bf16 -mavx512vnni; only called after the CPU and OS
// checks in dispatch.cpp (every CPU with AVX512_BF16 has AVX512_VNNI too, and the level asks for
// both). The fp32 kernels are avx512's; the bf16 conversion, dot product and GEMM use the BF16
// instructions (vcvtneps2bf16, vdpbf16ps: 32 multiply-adds per instruction), and the int8 scores
// VNNI's (vpdpbusd: 64 byte products summed into 16 int32 lanes per instruction).
#include <immintrin.h>

#include <cstdint>

#include "simd/avx512_tile.h"
#include "simd/int8_blocking.h"
#include "simd/kernels.h"

namespace slide {
namespace {

inline __mmask16 mask16(std::size_t rem) { return rem >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << rem) - 1u); }
inline __mmask32 mask32(std::size_t rem) { return rem >= 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << rem) - 1u); }

void to_bf16(const float* x, bf16* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = mask16(n - i);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, x + i));
    _mm256_mask_storeu_epi16(y + i, k, reinterpret_cast<const __m256i&>(h));
  }
}

float dot_bf16(const bf16* a, const bf16* b, std::size_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_loadu_si512(a + i), (__m512bh)_mm512_loadu_si512(b + i));
    acc1 = _mm512_dpbf16_ps(acc1, (__m512bh)_mm512_loadu_si512(a + i + 32), (__m512bh)_mm512_loadu_si512(b + i + 32));
  }
  for (; i < n; i += 32) {  // masked-off lanes load as +0, which adds nothing
    const __mmask32 k = mask32(n - i);
    acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_maskz_loadu_epi16(k, a + i),
                            (__m512bh)_mm512_maskz_loadu_epi16(k, b + i));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

// A k-pair (two BF16 values) is one 32-bit word, so the BF16 GEMM is the fp32 loop nest over
// words: each step one broadcast pair of A against 16 pairs of B (32 multiply-adds).
struct PairStep {
  using T = std::uint32_t;
  static __m512bh load(__mmask16 m, const T* b) { return (__m512bh)_mm512_maskz_loadu_epi32(m, b); }
  static __m512bh broadcast(T a) { return (__m512bh)_mm512_set1_epi32(static_cast<int>(a)); }
  static __m512 madd(__m512 acc, __m512bh a, __m512bh b) { return _mm512_dpbf16_ps(acc, a, b); }
};

void gemm_bf16(std::size_t m, std::size_t n, std::size_t k, const bf16* a, std::size_t lda, const bf16* b,
               std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
  Avx512Tile<PairStep>::gemm(m, n, k / 2, reinterpret_cast<const std::uint32_t*>(a), lda / 2,
                             reinterpret_cast<const std::uint32_t*>(b), ldb / 2, c, ldc, accumulate);
}

// The lane sums of four accumulators, in order: pairs of them interleaved and added twice leave
// each 128-bit block holding its share of all four, and the four blocks are then added.
inline __m128i lane_sums(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  const __m512i abcd = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  const __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(abcd), _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

// A tile of R weight rows against S samples, every accumulator in a register (16 at 4 x 4, beside
// the 4 rows' and one sample's bytes). A kInt8Depth step is one 64-byte load a row or sample, and
// one vpdpbusd a pair: four byte products summed straight into each 32-bit lane, where AVX2 needs
// maddubs, a 16-bit add and madd. Exact, as the AVX2 sums are within the kernel's value bounds.
template <int R, int S>
struct Int8Tile {
  static void run(std::size_t depth, const std::int8_t* w, const std::uint8_t* h, std::int32_t* out, std::size_t ldo) {
    __m512i acc[R][S];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int b = 0; b < S; ++b) acc[r][b] = _mm512_setzero_si512();
    for (std::size_t j = 0; j < depth; j += kInt8Depth) {
      __m512i rows[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) rows[r] = _mm512_loadu_si512(w + r * depth + j);
#pragma GCC unroll 4
      for (int b = 0; b < S; ++b) {
        const __m512i sample = _mm512_loadu_si512(h + b * depth + j);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], sample, rows[r]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      if constexpr (S == 4) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * ldo), lane_sums(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
      } else {
        for (int b = 0; b < S; ++b) out[r * ldo + b] = _mm512_reduce_add_epi32(acc[r][b]);
      }
    }
  }
};

void int8_scores(std::size_t rows, std::size_t samples, std::size_t depth, const std::int8_t* w,
                 const std::uint8_t* h, std::int32_t* out, std::size_t ldo) {
  int8_blocking::scores<Int8Tile, 4>(rows, samples, depth, w, h, out, ldo);
}

}  // namespace

const Kernels& avx512_bf16_kernels() {
  static const Kernels k = [] {
    Kernels t = avx512_kernels();
    t.level = SimdLevel::kAvx512Bf16;
    t.name = "avx512_bf16";
    t.to_bf16 = to_bf16;
    t.dot_bf16 = dot_bf16;
    t.gemm_bf16 = gemm_bf16;
    t.int8_scores = int8_scores;
    return t;
  }();
  return k;
}

}  // namespace slide
