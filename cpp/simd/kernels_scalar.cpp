#include "simd/kernels.h"
#include "simd/scalar_ops.h"

namespace slide {

const Kernels& scalar_kernels() {
  static const Kernels k{SimdLevel::kScalar, "scalar", scalar_ops::dot, scalar_ops::axpy, scalar_ops::adam,
                         scalar_ops::sgd};
  return k;
}

}  // namespace slide
