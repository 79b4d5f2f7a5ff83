// Compiled with -mamx-tile -mamx-bf16 beside avx512_bf16's flags; only called after the CPU, OS
// and permission checks in dispatch.cpp. Everything is avx512_bf16's except the BF16 GEMM, which
// runs on the AMX tile unit: one tdpbf16ps multiplies a 16 x 32 BF16 tile by a 32 x 16 one (8,192
// multiply-adds; vdpbf16ps does 32). On the Intel Xeon host of benches/, 1.76 TMAC/s on one core
// in a register-only loop, against about 40 G for AVX-512's FMAs.
//
// B's k-pair layout (kernels.h) is already the tile unit's: a B tile's row is 16 pairs, so full
// tiles load straight from the operands. Tiles that a ragged edge cuts (rows past m, columns past n,
// depth past k) are copied into zeroed 16 x 64-byte buffers first, so one configuration (every
// tile 16 rows of 64 bytes) serves every shape, and zeros add nothing.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "simd/kernels.h"

namespace slide {
namespace {

constexpr std::size_t kRows = 16;   // rows of every tile
constexpr std::size_t kDepth = 32;  // BF16 values in a row of an A tile (16 pairs)
constexpr std::size_t kCols = 16;   // fp32 columns in a C tile, pairs in a B tile's row

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

// Tiles 0-3: C (2 x 2 of 16 x 16 fp32); 4, 5: A (two strips of 16 rows); 6, 7: B (two strips of 16 columns).
const TileConfig& config() {
  static const TileConfig c = [] {
    TileConfig t;
    for (int i = 0; i < 8; ++i) {
      t.rows[i] = kRows;
      t.bytes_per_row[i] = 64;
    }
    return t;
  }();
  return c;
}

// The operands of one GEMM, and copies into zeroed buffers where a tile is cut.
struct Operands {
  std::size_t m, n, k;
  const bf16* a;
  std::size_t lda;
  const bf16* b;
  std::size_t ldb;

  // A's rows [i, i + 16) and columns [kk, kk + 32): straight from A when whole.
  const bf16* a_tile(std::size_t i, std::size_t kk, bf16* spare, std::size_t& stride) const {
    const std::size_t rows = std::min(kRows, m - i), depth = std::min(kDepth, k - kk);
    if (rows == kRows && depth == kDepth) {
      stride = lda * sizeof(bf16);
      return a + i * lda + kk;
    }
    std::memset(spare, 0, kRows * kDepth * sizeof(bf16));
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(spare + r * kDepth, a + (i + r) * lda + kk, depth * sizeof(bf16));
    stride = kDepth * sizeof(bf16);
    return spare;
  }

  // B's pairs [kk / 2, kk / 2 + 16) x columns [j, j + 16).
  const bf16* b_tile(std::size_t j, std::size_t kk, bf16* spare, std::size_t& stride) const {
    const std::size_t pairs = std::min(kDepth, k - kk) / 2, cols = std::min(kCols, n - j);
    if (pairs == kDepth / 2 && cols == kCols) {
      stride = ldb * sizeof(bf16);
      return b + (kk / 2) * ldb + 2 * j;
    }
    std::memset(spare, 0, kRows * kDepth * sizeof(bf16));
    for (std::size_t p = 0; p < pairs; ++p)
      std::memcpy(spare + p * 2 * kCols, b + (kk / 2 + p) * ldb + 2 * j, 2 * cols * sizeof(bf16));
    stride = 2 * kCols * sizeof(bf16);
    return spare;
  }
};

// GCC's tile intrinsics paste the register number into their assembly, so it must be a literal.
#define SLIDE_C_TILE(t, op) \
  switch (t) {              \
    case 0: op(0); break;   \
    case 1: op(1); break;   \
    case 2: op(2); break;   \
    default: op(3); break;  \
  }

// C tile `t` of a block: loaded (accumulate) or zeroed, straight from C when whole, else through
// `spare`.
void start_c(int t, float* c, std::size_t ldc, std::size_t rows, std::size_t cols, bool accumulate, float* spare) {
  if (!accumulate) {
#define SLIDE_ZERO(r) _tile_zero(r)
    SLIDE_C_TILE(t, SLIDE_ZERO)
#undef SLIDE_ZERO
    return;
  }
  const float* from = c;
  long stride = static_cast<long>(ldc * sizeof(float));
  if (rows != kRows || cols != kCols) {
    std::memset(spare, 0, kRows * kCols * sizeof(float));
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(spare + r * kCols, c + r * ldc, cols * sizeof(float));
    from = spare;
    stride = static_cast<long>(kCols * sizeof(float));
  }
#define SLIDE_LOAD(r) _tile_loadd(r, from, stride)
  SLIDE_C_TILE(t, SLIDE_LOAD)
#undef SLIDE_LOAD
}

void store_c(int t, float* c, std::size_t ldc, std::size_t rows, std::size_t cols, float* spare) {
  const bool whole = rows == kRows && cols == kCols;
  float* to = whole ? c : spare;
  const long stride = static_cast<long>((whole ? ldc : kCols) * sizeof(float));
#define SLIDE_STORE(r) _tile_stored(r, to, stride)
  SLIDE_C_TILE(t, SLIDE_STORE)
#undef SLIDE_STORE
  if (!whole)
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, spare + r * kCols, cols * sizeof(float));
}

// C's 32 x 32 block at (i, j) (cut where m or n ends): 2 x 2 C tiles, each A and B tile loaded
// once per 32-deep step and used twice.
void block(const Operands& op, std::size_t i, std::size_t j, float* c, std::size_t ldc, bool accumulate) {
  alignas(64) bf16 a0[kRows * kDepth], a1[kRows * kDepth], b0[kRows * kDepth], b1[kRows * kDepth];
  alignas(64) float spare[kRows * kCols];
  // A second strip of A or B wholly past the edge is left out, with the C tiles it would make.
  const std::size_t rows0 = std::min(kRows, op.m - i), rows1 = op.m > i + kRows ? std::min(kRows, op.m - i - kRows) : 0;
  const std::size_t cols0 = std::min(kCols, op.n - j), cols1 = op.n > j + kCols ? std::min(kCols, op.n - j - kCols) : 0;
  float* c00 = c + i * ldc + j;
  float* c10 = rows1 ? c00 + kRows * ldc : nullptr;  // only where C has those rows
  start_c(0, c00, ldc, rows0, cols0, accumulate, spare);
  if (cols1) start_c(1, c00 + kCols, ldc, rows0, cols1, accumulate, spare);
  if (rows1) start_c(2, c10, ldc, rows1, cols0, accumulate, spare);
  if (rows1 && cols1) start_c(3, c10 + kCols, ldc, rows1, cols1, accumulate, spare);
  for (std::size_t kk = 0; kk < op.k; kk += kDepth) {
    std::size_t stride;
    const bf16* t = op.a_tile(i, kk, a0, stride);
    _tile_loadd(4, t, static_cast<long>(stride));
    t = op.b_tile(j, kk, b0, stride);
    _tile_loadd(6, t, static_cast<long>(stride));
    _tile_dpbf16ps(0, 4, 6);
    if (cols1) {
      t = op.b_tile(j + kCols, kk, b1, stride);
      _tile_loadd(7, t, static_cast<long>(stride));
      _tile_dpbf16ps(1, 4, 7);
    }
    if (rows1) {
      t = op.a_tile(i + kRows, kk, a1, stride);
      _tile_loadd(5, t, static_cast<long>(stride));
      _tile_dpbf16ps(2, 5, 6);
      if (cols1) _tile_dpbf16ps(3, 5, 7);
    }
  }
  store_c(0, c00, ldc, rows0, cols0, spare);
  if (cols1) store_c(1, c00 + kCols, ldc, rows0, cols1, spare);
  if (rows1) store_c(2, c10, ldc, rows1, cols0, spare);
  if (rows1 && cols1) store_c(3, c10 + kCols, ldc, rows1, cols1, spare);
}

void gemm_bf16(std::size_t m, std::size_t n, std::size_t k, const bf16* a, std::size_t lda, const bf16* b,
               std::size_t ldb, float* c, std::size_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // no products: C stays, or becomes zero
    if (!accumulate)
      for (std::size_t r = 0; r < m; ++r) std::memset(c + r * ldc, 0, n * sizeof(float));
    return;
  }
  // The tile configuration is per thread, and a thread may have released it since its last call.
  _tile_loadconfig(&config());
  const Operands op{m, n, k, a, lda, b, ldb};
  // Column blocks outermost: a block's B strips (n x k) stay in cache while every row block of A
  // streams past them; the engine's calls have a few hundred rows of A against B strips of up to
  // a few hundred columns.
  for (std::size_t j = 0; j < n; j += 2 * kCols)
    for (std::size_t i = 0; i < m; i += 2 * kRows) block(op, i, j, c, ldc, accumulate);
  _tile_release();
}

#undef SLIDE_C_TILE

}  // namespace

const Kernels& amx_bf16_kernels() {
  static const Kernels k = [] {
    Kernels t = avx512_bf16_kernels();
    t.level = SimdLevel::kAmxBf16;
    t.name = "amx_bf16";
    t.gemm_bf16 = gemm_bf16;
    return t;
  }();
  return k;
}

}  // namespace slide
