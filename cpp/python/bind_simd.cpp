// Run-time SIMD level, plus direct access to every level's kernels so the tests can hold each
// one against the scalar code.
#include <pybind11/stl.h>

#include "common/check.h"
#include "python/bindings.h"
#include "simd/kernels.h"
#include "simd/window_layout.h"

namespace slide::python {

namespace {
const Kernels& level_kernels(const std::string& name) {
  const Kernels* k = kernels_for(parse_simd_level(name));
  SLIDE_REQUIRE(k != nullptr, "SIMD level '" << name << "' is not supported by this CPU");
  return *k;
}
using F = py::array_t<float, py::array::c_style>;
using H = py::array_t<bf16, py::array::c_style>;
using U = py::array_t<std::uint32_t, py::array::c_style>;

// Windows x width coordinates, window after window, in the kernels' interleaved layout.
std::vector<std::uint32_t> interleaved(const U& coords, std::size_t x_size) {
  SLIDE_REQUIRE(coords.ndim() == 2, "coordinates must be a 2-d array (windows x width)");
  const std::vector<std::uint32_t> natural(coords.data(), coords.data() + coords.size());
  for (std::uint32_t c : natural) SLIDE_REQUIRE(c < x_size, "coordinate " << c << " is outside x");
  return interleave_windows(natural, static_cast<std::size_t>(coords.shape(0)), static_cast<std::size_t>(coords.shape(1)),
                            0u);
}
}  // namespace

void bind_simd(py::module_& m) {
  m.def("simd_level", [] { return std::string(kernels().name); });
  // Whether matmul="bf16" rounds its products' inputs at `level` (default: the chosen one), i.e. the
  // level multiplies BF16 in hardware.
  m.def("bf16_matmul_native", [](const std::string& level) {
    return bf16_matmul_native(level.empty() ? kernels() : level_kernels(level));
  }, py::arg("level") = "");
  m.def("available_simd_levels", [] {
    std::vector<std::string> out;
    for (SimdLevel l : available_simd_levels()) out.push_back(kernels_for(l)->name);
    return out;
  });
  m.def("built_simd_levels", [] {
    std::vector<std::string> out;
    for (SimdLevel l : built_simd_levels()) out.push_back(simd_level_name(l));
    return out;
  });
  m.def("_kernel_dot", [](const std::string& level, const F& a, const F& b) {
    SLIDE_REQUIRE(a.size() == b.size(), "length mismatch");
    return level_kernels(level).dot(a.data(), b.data(), a.size());
  });
  m.def("_kernel_axpy", [](const std::string& level, float alpha, const F& x, F y) {
    SLIDE_REQUIRE(x.size() == y.size(), "length mismatch");
    level_kernels(level).axpy(alpha, x.data(), y.mutable_data(), x.size());
  });
  m.def("_kernel_adam", [](const std::string& level, F w, F mo, F v, F g, float lr, float b1, float b2, float eps,
                           float scale) {
    SLIDE_REQUIRE(w.size() == mo.size() && w.size() == v.size() && w.size() == g.size(), "length mismatch");
    AdamStep s{lr, b1, b2, eps, scale};
    level_kernels(level).adam(w.mutable_data(), mo.mutable_data(), v.mutable_data(), g.mutable_data(), w.size(), s);
  });
  m.def("_kernel_adagrad", [](const std::string& level, F w, F acc, F g, float lr, float eps, float scale) {
    SLIDE_REQUIRE(w.size() == acc.size() && w.size() == g.size(), "length mismatch");
    level_kernels(level).adagrad(w.mutable_data(), acc.mutable_data(), g.mutable_data(), w.size(), lr, eps, scale);
  });
  m.def("_kernel_sgd", [](const std::string& level, F w, F g, float lr) {
    SLIDE_REQUIRE(w.size() == g.size(), "length mismatch");
    level_kernels(level).sgd(w.mutable_data(), g.mutable_data(), w.size(), lr);
  });
  m.def("_kernel_to_bf16", [](const std::string& level, const F& x) {
    H y(x.size());
    level_kernels(level).to_bf16(x.data(), y.mutable_data(), x.size());
    return y;
  });
  m.def("_kernel_from_bf16", [](const std::string& level, const H& x) {
    F y(x.size());
    level_kernels(level).from_bf16(x.data(), y.mutable_data(), x.size());
    return y;
  });
  m.def("_kernel_dot_bf16", [](const std::string& level, const H& a, const H& b) {
    SLIDE_REQUIRE(a.size() == b.size(), "length mismatch");
    return level_kernels(level).dot_bf16(a.data(), b.data(), a.size());
  });
  m.def("_kernel_axpy_bf16", [](const std::string& level, float alpha, const H& x, F y) {
    SLIDE_REQUIRE(x.size() == y.size(), "length mismatch");
    level_kernels(level).axpy_bf16(alpha, x.data(), y.mutable_data(), x.size());
  });
  m.def("_kernel_max_value", [](const std::string& level, const F& x) {
    return level_kernels(level).max_value(x.data(), x.size());
  });
  m.def("_kernel_exp_sum", [](const std::string& level, const F& x, float shift) {
    F y(x.size());
    const float sum = level_kernels(level).exp_sum(x.data(), y.mutable_data(), x.size(), shift);
    return py::make_tuple(y, sum);
  });
  m.def("_kernel_gemm", [](const std::string& level, const F& a, const F& b, F c, bool accumulate) {
    SLIDE_REQUIRE(a.ndim() == 2 && b.ndim() == 2 && c.ndim() == 2, "gemm takes 2-d arrays");
    // C may be wider than B: its extra columns must come back untouched.
    SLIDE_REQUIRE(a.shape(1) == b.shape(0) && c.shape(0) == a.shape(0) && c.shape(1) >= b.shape(1),
                  "gemm shapes do not match");
    const auto m = static_cast<std::size_t>(a.shape(0)), k = static_cast<std::size_t>(a.shape(1)),
               n = static_cast<std::size_t>(b.shape(1)), ldc = static_cast<std::size_t>(c.shape(1));
    level_kernels(level).gemm(m, n, k, a.data(), k, b.data(), n, c.mutable_data(), ldc, accumulate);
  });
  // a: m x k BF16 (k even); b: B's k-pairs, k/2 x 2n (kernels.h); c: m x >= n.
  m.def("_kernel_gemm_bf16", [](const std::string& level, const H& a, const H& b, F c, bool accumulate) {
    SLIDE_REQUIRE(a.ndim() == 2 && b.ndim() == 2 && c.ndim() == 2, "gemm_bf16 takes 2-d arrays");
    SLIDE_REQUIRE(a.shape(1) % 2 == 0 && b.shape(1) % 2 == 0, "gemm_bf16 takes an even depth and pairs of B's rows");
    SLIDE_REQUIRE(a.shape(1) == 2 * b.shape(0) && c.shape(0) == a.shape(0) && 2 * c.shape(1) >= b.shape(1),
                  "gemm_bf16 shapes do not match");
    const auto m = static_cast<std::size_t>(a.shape(0)), k = static_cast<std::size_t>(a.shape(1)),
               n = static_cast<std::size_t>(b.shape(1)) / 2, ldc = static_cast<std::size_t>(c.shape(1));
    level_kernels(level).gemm_bf16(m, n, k, a.data(), k, b.data(), 2 * n, c.mutable_data(), ldc, accumulate);
  });
  m.def("_kernel_int8_scores", [](const std::string& level, const py::array_t<std::int8_t, py::array::c_style>& w,
                                   const py::array_t<std::uint8_t, py::array::c_style>& h) {
    SLIDE_REQUIRE(w.ndim() == 2 && h.ndim() == 2 && w.shape(1) == h.shape(1), "int8 scores take (rows, depth) and (samples, depth)");
    const auto depth = static_cast<std::size_t>(w.shape(1));
    SLIDE_REQUIRE(depth % kInt8Depth == 0, "depth must be a multiple of " << kInt8Depth);
    const std::int8_t* wp = w.data();
    const std::uint8_t* hp = h.data();
    for (py::ssize_t i = 0; i < w.size(); ++i)
      SLIDE_REQUIRE(wp[i] >= -kInt8WeightMax, "weights must be within [-" << kInt8WeightMax << ", " << kInt8WeightMax << "]");
    for (py::ssize_t i = 0; i < h.size(); ++i) SLIDE_REQUIRE(hp[i] <= kInt8SampleMax, "samples must be at most " << kInt8SampleMax);
    py::array_t<std::int32_t> out({w.shape(0), h.shape(0)});
    level_kernels(level).int8_scores(w.shape(0), h.shape(0), depth, wp, hp, out.mutable_data(), h.shape(0));
    return out;
  });
  m.def("_kernel_int8_quantize", [](const std::string& level, const F& w) {
    SLIDE_REQUIRE(w.ndim() == 2, "int8 quantization takes (rows, width) weights");
    const auto rows = static_cast<std::size_t>(w.shape(0)), width = static_cast<std::size_t>(w.shape(1));
    py::array_t<std::int8_t> out({w.shape(0), w.shape(1)});
    F top(static_cast<py::ssize_t>(rows)), l1(static_cast<py::ssize_t>(rows));
    std::fill(out.mutable_data(), out.mutable_data() + out.size(), std::int8_t{0});
    const Kernels& k = level_kernels(level);
    for (std::size_t i = 0; i < rows; ++i)
      top.mutable_data()[i] = k.int8_quantize(w.data() + i * width, width, out.mutable_data() + i * width,
                                              l1.mutable_data() + i);
    return py::make_tuple(out, top, l1);
  });
  m.def("_kernel_int8_upper", [](const std::string& level, const py::array_t<std::int32_t, py::array::c_style>& acc,
                                  const F& step, const F& sample_term, const F& half_step, float row_scale,
                                  float row_offset, float row_term, const F& bar) {
    const auto n = static_cast<std::size_t>(acc.size());
    SLIDE_REQUIRE(static_cast<std::size_t>(step.size()) == n && static_cast<std::size_t>(sample_term.size()) == n &&
                      static_cast<std::size_t>(half_step.size()) == n && static_cast<std::size_t>(bar.size()) == n,
                  "every array must have one value per sample");
    F upper(static_cast<py::ssize_t>(n));
    const bool hit = level_kernels(level).int8_upper(acc.data(), n, step.data(), sample_term.data(), half_step.data(),
                                                     row_scale, row_offset, row_term, bar.data(), upper.mutable_data());
    return py::make_tuple(hit, upper);
  });
  m.def("_kernel_add_bias_hits", [](const std::string& level, const F& scores, float bias, const F& bar) {
    const auto n = static_cast<std::size_t>(scores.size());
    SLIDE_REQUIRE(static_cast<std::size_t>(bar.size()) == n, "bar must have one value per score");
    F out(static_cast<py::ssize_t>(n));
    std::copy(scores.data(), scores.data() + n, out.mutable_data());
    U hits(static_cast<py::ssize_t>(n));
    const std::size_t count =
        level_kernels(level).add_bias_hits(out.mutable_data(), n, bias, bar.data(), hits.mutable_data());
    return py::make_tuple(hits[py::slice(0, static_cast<py::ssize_t>(count), 1)], out);
  });
  m.def("_kernel_wta", [](const std::string& level, const F& x, const U& coords, float skip) {
    const std::vector<std::uint32_t> c = interleaved(coords, x.size());
    U out(coords.shape(0));
    level_kernels(level).wta(x.data(), x.size(), c.data(), coords.shape(0), coords.shape(1), skip, out.mutable_data());
    return out;
  });
}

}  // namespace slide::python
