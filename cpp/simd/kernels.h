// One dispatch header for the hot kernels (faiss style): each ISA has its own file compiled with
// its own flags; the level is chosen once at run time from the CPU and the OS, overridable with
// SLIDE_SIMD=scalar|avx2|avx512|avx512_bf16|amx_bf16. Nothing is swapped after the first call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slide {

enum class SimdLevel { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3, kAmxBf16 = 4 };

// A bfloat16 value: the top 16 bits of an fp32.
using bf16 = std::uint16_t;

struct AdamStep {
  float lr;     // already bias-corrected
  float beta1;
  float beta2;
  float eps;
  float grad_scale;  // gradients are accumulated as sums; this turns them into means
};

struct Kernels {
  SimdLevel level;
  const char* name;
  float (*dot)(const float* a, const float* b, std::size_t n);
  // y += a * x
  void (*axpy)(float a, const float* x, float* y, std::size_t n);
  // Lazy Adam on one row; reads and then zeroes the gradient accumulator g.
  void (*adam)(float* w, float* m, float* v, float* g, std::size_t n, const AdamStep& s);
  // Plain SGD on one row; zeroes g.
  void (*sgd)(float* w, float* g, std::size_t n, float lr_times_scale);
  // Adagrad on one row: acc += (g * scale)^2, w -= lr * g * scale / (sqrt(acc) + eps); zeroes g.
  void (*adagrad)(float* w, float* acc, float* g, std::size_t n, float lr, float eps, float grad_scale);
  // fp32 -> bf16, rounding to nearest even (bit-identical on every level) and back.
  void (*to_bf16)(const float* x, bf16* y, std::size_t n);
  void (*from_bf16)(const bf16* x, float* y, std::size_t n);
  // Dot product of two bf16 vectors, accumulated in fp32 (vdpbf16ps on avx512_bf16).
  float (*dot_bf16)(const bf16* a, const bf16* b, std::size_t n);
  // y += a * x for a bf16 x and an fp32 y.
  void (*axpy_bf16)(float a, const bf16* x, float* y, std::size_t n);
  // C (m x n) = A (m x k) * B (k x n), or C += A * B when `accumulate`; row-major with leading
  // dimensions. Each C element sums its k products in order, so levels differ only by FMA rounding.
  void (*gemm)(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const float* b,
               std::size_t ldb, float* c, std::size_t ldc, bool accumulate);
  // Softmax over an active set: the largest value (-inf for n = 0; NaN if any is NaN), and
  // y = exp(x - shift) returning the sum of y (y may be x). The wide levels use a polynomial
  // within 2 ulp of libm's expf; results below 2^-126 may flush to zero.
  float (*max_value)(const float* x, std::size_t n);
  float (*exp_sum)(const float* x, float* y, std::size_t n, float shift);
  // Winner-take-all hashing of x (`dim` floats) over `windows` windows of `width` gathered
  // coordinates each, the coordinates (all < dim) interleaved as simd/window_layout.h describes:
  // out[h] = the position in window h of its first largest x value, skipping values equal to
  // `skip` (NaN skips nothing), or kNoWinner when no value qualifies. Every level returns
  // identical codes.
  void (*wta)(const float* x, std::size_t dim, const std::uint32_t* coords, std::size_t windows, std::size_t width,
              float skip, std::uint32_t* out);
  // Integer scores of `samples` rows of h against `rows` rows of w, both `depth` bytes per row:
  // out[i * ldo + b] = sum_j w[i * depth + j] * h[b * depth + j], exact in int32. depth is a
  // multiple of kInt8Depth, h values are at most kInt8SampleMax and w values within
  // [-kInt8WeightMax, kInt8WeightMax], so the AVX2 kernels add two byte-pair sums in 16 bits
  // (avx512_bf16's VNNI ones sum four products straight into 32).
  void (*int8_scores)(std::size_t rows, std::size_t samples, std::size_t depth, const std::int8_t* w,
                      const std::uint8_t* h, std::int32_t* out, std::size_t ldo);
  // One output row's upper bounds over n samples from its int8 scores (train/quantized_scan.cpp
  // derives the form): upper[b] = row_scale * (acc[b] * step[b] + sample_term[b]) +
  // (row_offset + row_term * half_step[b]). Returns whether any upper[b] reaches bar[b] (NaN counts).
  bool (*int8_upper)(const std::int32_t* acc, std::size_t n, const float* step, const float* sample_term,
                     const float* half_step, float row_scale, float row_offset, float row_term, const float* bar,
                     float* upper);
  // The GEMM above from BF16 inputs with fp32 sums: A (m x k) row-major BF16, B in k-pairs (row p of
  // b holds B[2p][j], B[2p + 1][j] at 2j, 2j + 1: the layout vdpbf16ps multiplies), k even (a
  // caller pads a zero), lda and ldb even, counted in BF16 values. Products of two BF16 values are
  // exact in fp32, so levels differ only by summation order. avx512_bf16 has its own (twice the
  // multiply-adds of an fp32 FMA per instruction) and amx_bf16 its tiles' (kernels_amx_bf16.cpp);
  // the others run the scalar code, and the engine takes this path only where it is native
  // (bf16_matmul_native).
  void (*gemm_bf16)(std::size_t m, std::size_t n, std::size_t k, const bf16* a, std::size_t lda, const bf16* b,
                    std::size_t ldb, float* c, std::size_t ldc, bool accumulate);
  // One output row's scores for n samples in a top-k scan: s[b] += bias, then the samples whose
  // score reaches their bar (s[b] >= bar[b], or NaN) written to hits in increasing order; returns
  // how many. The scan then looks at those samples only.
  std::size_t (*add_bias_hits)(float* s, std::size_t n, float bias, const float* bar, std::uint32_t* hits);
  // One row of n weights as bytes for int8_scores (train/quantized_scan.cpp): out[j] = w[j] x
  // kInt8WeightMax / max|w| rounded to nearest, ties to even, whatever the rounding mode (so within
  // half a step, as the scan's bound needs), in [-kInt8WeightMax, kInt8WeightMax]. Returns max|w|
  // and sets *l1 to sum |w|; when that is NaN or infinite, out is left unwritten. Every level
  // writes the same bytes and maximum; l1 is summed in the level's order (it only scales a bound
  // that carries a margin for rounding).
  float (*int8_quantize)(const float* w, std::size_t n, std::int8_t* out, float* l1);
};

// Whether `k` multiplies BF16 matrices in hardware, so that rounding to BF16 buys speed.
inline bool bf16_matmul_native(const Kernels& k) { return k.level >= SimdLevel::kAvx512Bf16; }

constexpr std::size_t kInt8Depth = 64;
constexpr int kInt8SampleMax = 63;
constexpr int kInt8WeightMax = 127;

constexpr std::uint32_t kNoWinner = 0xFFFFFFFFu;

const Kernels& kernels();                        // the chosen level, fixed for the process
const Kernels* kernels_for(SimdLevel level);     // nullptr when this CPU cannot run it
std::vector<SimdLevel> available_simd_levels();
std::vector<SimdLevel> built_simd_levels();          // every level this build has kernels for, scalar first
const char* simd_level_name(SimdLevel level);       // "scalar", "avx2", "avx512", "avx512_bf16", "amx_bf16"
SimdLevel parse_simd_level(const std::string& name);  // throws std::invalid_argument

// Per-ISA tables (defined in kernels_<isa>.cpp).
const Kernels& scalar_kernels();
#ifdef SLIDE_HAVE_X86
const Kernels& avx2_kernels();
const Kernels& avx512_kernels();
const Kernels& avx512_bf16_kernels();
const Kernels& amx_bf16_kernels();
#endif

}  // namespace slide
