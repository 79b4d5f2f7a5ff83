// The cache blocking shared by every level's GEMM (BLIS-style loop order without packing): a
// KC x NC panel of B stays in L2 while MR-row strips of A sweep it, and an ISA-specific
// micro-kernel keeps an MR x NR tile of C in registers over one KC step.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace slide::gemm_blocking {

inline constexpr std::size_t kPanelCols = 256;   // NC
inline constexpr std::size_t kPanelDepth = 256;  // KC
inline constexpr int kRows = 6;                  // MR

// A B panel is packed when B's rows are longer than a panel (so the panel's rows lie far apart:
// the logits product reads its transposed weights this way) and at least this many rows of A
// reuse it; otherwise packing would cost about what it saves. Measured on one AVX2 core, best of
// 80 calls: the 256 x 6,000 x 128 logits product 51 -> 60 GFLOP/s packed, OpenBLAS 74.
inline constexpr std::size_t kPackMinRows = 2 * kRows;

// Copies the kc x nc panel of B at `b` into NR-column strips, each kc x NR and contiguous, so
// that a micro-kernel streams its strip from consecutive cache lines instead of one line (and
// often one page) per step of depth. A narrower last strip keeps its width; the micro-kernel's
// masked loads never read past it. T is a float, or a 32-bit word holding a pair of BF16 values
// (the BF16 GEMM is this loop nest over k-pairs).
template <std::size_t NR, class T>
void pack_panel(std::size_t kc, std::size_t nc, const T* b, std::size_t ldb, T* packed) {
  for (std::size_t jr = 0; jr < nc; jr += NR) {
    const std::size_t cols = std::min(NR, nc - jr);
    T* strip = packed + jr * kc;
    for (std::size_t p = 0; p < kc; ++p) std::copy(b + p * ldb + jr, b + p * ldb + jr + cols, strip + p * NR);
  }
}

// `micro(mr, kc, a, lda, b, ldb, c, ldc, cols, load_c)` computes an mr x cols tile (cols <= NR),
// starting from C when load_c and from zero otherwise.
template <std::size_t NR, class T, class Micro>
void run(std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda, const T* b,
         std::size_t ldb, float* c, std::size_t ldc, bool accumulate, Micro micro) {
  if (k == 0) {
    if (!accumulate)
      for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const bool pack = m >= kPackMinRows && ldb > kPanelCols;
  // One panel per thread, reused by every call on that thread (the engine's threads each run their own GEMMs).
  thread_local std::vector<T> packed;
  if (pack) packed.resize(kPanelDepth * ((kPanelCols + NR - 1) / NR) * NR);
  for (std::size_t jc = 0; jc < n; jc += kPanelCols) {
    const std::size_t nc = std::min(kPanelCols, n - jc);
    for (std::size_t pc = 0; pc < k; pc += kPanelDepth) {
      const std::size_t kc = std::min(kPanelDepth, k - pc);
      const bool load_c = accumulate || pc > 0;
      const T* panel = b + pc * ldb + jc;
      if (pack) pack_panel<NR>(kc, nc, panel, ldb, packed.data());
      for (std::size_t ic = 0; ic < m; ic += kRows) {
        const int mr = static_cast<int>(std::min<std::size_t>(kRows, m - ic));
        for (std::size_t jr = 0; jr < nc; jr += NR) {
          const T* strip = pack ? packed.data() + jr * kc : panel + jr;
          micro(mr, kc, a + ic * lda + pc, lda, strip, pack ? NR : ldb, c + ic * ldc + jc + jr, ldc,
                std::min(NR, nc - jr), load_c);
        }
      }
    }
  }
}

// Turns a run-time row count into the micro-kernel template instance.
template <template <int> class Tile, class... Args>
inline void dispatch_rows(int mr, Args... args) {
  switch (mr) {
    case 6: Tile<6>::run(args...); break;
    case 5: Tile<5>::run(args...); break;
    case 4: Tile<4>::run(args...); break;
    case 3: Tile<3>::run(args...); break;
    case 2: Tile<2>::run(args...); break;
    default: Tile<1>::run(args...); break;
  }
}

}  // namespace slide::gemm_blocking
