// slide.torch.SparseAdam's step: the engine's lazy Adam over the rows of a PyTorch parameter that
// a sparse gradient names, in place in the parameter's and its moments' own memory.
#include <cmath>
#include <string>

#include "common/check.h"
#include "optim/sparse_row_step.h"
#include "python/bindings.h"

namespace slide::python {

namespace {

using InPlace = py::array_t<float, py::array::c_style>;  // taken with noconvert(): never a copy
using Indices = py::array_t<std::int64_t, py::array::c_style>;
using Values = py::array_t<float, py::array::c_style>;

void require_like(const char* name, const InPlace& a, const InPlace& weights) {
  SLIDE_REQUIRE(a.writeable(), name << " must be writeable");
  SLIDE_REQUIRE(a.ndim() == 2 && a.shape(0) == weights.shape(0) && a.shape(1) == weights.shape(1),
                name << " must have the parameter's shape (" << weights.shape(0) << ", " << weights.shape(1) << ")");
}

}  // namespace

void bind_sparse_step(py::module_& m) {
  m.def(
      "sparse_adam_step",
      [](InPlace& weights, InPlace& exp_avg, InPlace& exp_avg_sq, const Indices& index, const Values& values,
         float lr, float beta1, float beta2, float eps, std::int64_t step, int threads) {
        SLIDE_REQUIRE(weights.ndim() == 2 && weights.writeable(), "the parameter must be a writeable 2-D array");
        require_like("exp_avg", exp_avg, weights);
        require_like("exp_avg_sq", exp_avg_sq, weights);
        const auto count = index.ndim() == 1 ? index.shape(0) : -1;
        SLIDE_REQUIRE(count >= 0, "the gradient's row indices must be 1-D");
        SLIDE_REQUIRE(values.ndim() == 2 && values.shape(0) == count && values.shape(1) == weights.shape(1),
                      "the gradient's values must be (" << count << ", " << weights.shape(1) << "), got "
                                                        << (values.ndim() == 2 ? values.shape(0) : -1) << " rows");
        SLIDE_REQUIRE(std::isfinite(lr) && lr >= 0.0f, "lr must be finite and >= 0, got " << lr);
        SLIDE_REQUIRE(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f,
                      "betas must be in [0, 1), got (" << beta1 << ", " << beta2 << ")");
        SLIDE_REQUIRE(std::isfinite(eps) && eps > 0.0f, "eps must be finite and > 0, got " << eps);
        SLIDE_REQUIRE(step >= 1, "step must be >= 1, got " << step);
        SLIDE_REQUIRE(threads >= 1, "threads must be >= 1, got " << threads);
        OptimizerConfig config;
        config.beta1 = beta1;
        config.beta2 = beta2;
        config.eps = eps;
        const OptimizerStep adam(config, lr, step, 1.0f);
        float* state[2] = {exp_avg.mutable_data(), exp_avg_sq.mutable_data()};
        float* w = weights.mutable_data();
        const SparseRowGradient g{index.data(), values.data(), static_cast<std::size_t>(count),
                                  static_cast<std::size_t>(weights.shape(1))};
        const auto rows = static_cast<std::size_t>(weights.shape(0));
        py::gil_scoped_release release;
        return sparse_row_step(adam, w, state, 2, rows, g, threads);
      },
      py::arg("weights").noconvert(), py::arg("exp_avg").noconvert(), py::arg("exp_avg_sq").noconvert(),
      py::arg("index"), py::arg("values"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
      py::arg("step"), py::arg("threads"),
      "torch.optim.SparseAdam's step in place over the distinct rows `index` names (repeats summed): "
      "returns how many rows stepped.");
}

}  // namespace slide::python
