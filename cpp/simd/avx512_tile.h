// The AVX-512 GEMM's register tile, shared by the fp32 GEMM (kernels_avx512.cpp) and the BF16 one
// (kernels_avx512_bf16.cpp): an MR x 32 tile of C in 2*MR registers over one KC step of the
// blocking (simd/gemm_blocking.h); masks cover a narrower last tile. `Step` is the ISA's
// multiply-add of one element of A (a float, or a 32-bit word holding a pair of BF16 values)
// against two registers of B: Step::T, Step::load(mask, b), Step::broadcast(a), Step::madd(acc,
// a, b). Only files compiled with AVX-512 flags include it; its anonymous namespace gives each its
// own copy.
#pragma once
#include <immintrin.h>

#include <cstddef>

#include "simd/gemm_blocking.h"

namespace slide {
namespace {

inline __mmask16 tile_mask(std::size_t cols) {
  return cols >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << cols) - 1u);
}

template <class Step>
struct Avx512Tile {
  using T = typename Step::T;

  template <int MR>
  struct Rows {
    static void run(std::size_t kc, const T* a, std::size_t lda, const T* b, std::size_t ldb, float* c,
                    std::size_t ldc, std::size_t cols, bool load_c) {
      const __mmask16 m0 = tile_mask(cols), m1 = cols > 16 ? tile_mask(cols - 16) : 0;
      __m512 c0[MR], c1[MR];
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        c0[r] = load_c ? _mm512_maskz_loadu_ps(m0, c + r * ldc) : _mm512_setzero_ps();
        c1[r] = load_c ? _mm512_maskz_loadu_ps(m1, c + r * ldc + 16) : _mm512_setzero_ps();
      }
      for (std::size_t p = 0; p < kc; ++p) {
        const auto b0 = Step::load(m0, b + p * ldb);
        const auto b1 = Step::load(m1, b + p * ldb + 16);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
          const auto ar = Step::broadcast(a[r * lda + p]);
          c0[r] = Step::madd(c0[r], ar, b0);
          c1[r] = Step::madd(c1[r], ar, b1);
        }
      }
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_ps(c + r * ldc, m0, c0[r]);
        _mm512_mask_storeu_ps(c + r * ldc + 16, m1, c1[r]);
      }
    }
  };

  // C (m x n) = A (m x k) B (k x n), or C += A B, in elements of T (k counts them).
  static void gemm(std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda, const T* b,
                   std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
    gemm_blocking::run<32>(m, n, k, a, lda, b, ldb, c, ldc, accumulate,
                           [](int mr, std::size_t kc, const T* a, std::size_t lda, const T* b, std::size_t ldb,
                              float* c, std::size_t ldc, std::size_t cols, bool load_c) {
                             gemm_blocking::dispatch_rows<Rows>(mr, kc, a, lda, b, ldb, c, ldc, cols, load_c);
                           });
  }
};

}  // namespace
}  // namespace slide
