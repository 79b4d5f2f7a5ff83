#include "simd/kernels.h"
#include "simd/scalar_ops.h"

namespace slide {

const Kernels& scalar_kernels() {
  using namespace scalar_ops;
  static const Kernels k{SimdLevel::kScalar, "scalar", dot, axpy, adam, sgd, adagrad, to_bf16, from_bf16, dot_bf16, axpy_bf16, gemm, max_value, exp_sum,
                         [](const float* x, std::size_t, const std::uint32_t* c, std::size_t w, std::size_t width,
                            float skip, std::uint32_t* out) { wta(x, c, w, width, skip, out); },
                         int8_scores, int8_upper, gemm_bf16, add_bias_hits, int8_quantize};
  return k;
}

}  // namespace slide
