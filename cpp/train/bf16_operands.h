// Building the BF16 GEMM's operands (simd/kernels.h, gemm_bf16) for the batch's output layer: a
// k-pair is two BF16 values in one 32-bit word, so B in k-pairs is B's rows interleaved two by
// two, and a transposed matrix in k-pairs is a transpose of words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd/kernels.h"

namespace slide {

// Rows [r0, r1) of out (each 2 * cols values, ldo apart) from rows 2r and 2r + 1 of x (`rows` of
// `cols` values, ldx apart) interleaved; a missing row 2r + 1 (odd `rows`) reads as zeros.
inline void interleave_row_pairs(const bf16* x, std::size_t rows, std::size_t cols, std::size_t ldx,
                                 std::size_t r0, std::size_t r1, bf16* out, std::size_t ldo) {
  for (std::size_t r = r0; r < r1; ++r) {
    const bf16* even = x + 2 * r * ldx;
    const bf16* odd = 2 * r + 1 < rows ? even + ldx : nullptr;
    bf16* o = out + r * ldo;
    for (std::size_t q = 0; q < cols; ++q) {
      o[2 * q] = even[q];
      o[2 * q + 1] = odd ? odd[q] : bf16{0};
    }
  }
}

// Column n of the k-pair layout (ldo words between its rows) from row n of x (`words` words of two
// BF16 values each): out[p * ldo + n] = word p of the row.
inline void scatter_row_words(const bf16* row, std::size_t words, std::size_t n, std::uint32_t* out,
                              std::size_t ldo) {
  for (std::size_t p = 0; p < words; ++p) {
    std::uint32_t w;
    std::memcpy(&w, row + 2 * p, sizeof w);
    out[p * ldo + n] = w;
  }
}

}  // namespace slide
