// The output layer on its own (slide.torch): trained from top hidden activations another framework
// computed, and scored from them.
#include <cmath>
#include <string>

#include "common/check.h"
#include "nn/network.h"
#include "python/bindings.h"
#include "python/csr_arrays.h"
#include "train/external_output.h"
#include "train/inference.h"

namespace slide::python {

namespace {

// The rows x K activations the output layer reads; K is its input width.
std::size_t hidden_rows(const Network& net, const FloatArray& hidden) {
  const std::size_t K = net.layers.back().params.cols;
  SLIDE_REQUIRE(hidden.ndim() == 2 && static_cast<std::size_t>(hidden.shape(1)) == K,
                "hidden must be a (rows, " << K << ") float32 matrix");
  return static_cast<std::size_t>(hidden.shape(0));
}

}  // namespace

void bind_output_layer(py::module_& m) {
  m.def(
      "output_layer_gradients",
      [](Network& net, const FloatArray& hidden, const IndptrArray& yp, const IndexArray& yi, bool compact) {
        const std::size_t rows = hidden_rows(net, hidden);
        CsrIds y = labels_view(yp, yi, net.config().outputs(), nullptr);
        SLIDE_REQUIRE(static_cast<std::size_t>(y.rows) == rows, "hidden has " << rows << " rows but labels have " << y.rows);
        const std::size_t K = net.layers.back().params.cols;
        py::array_t<float> delta({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(K)});
        float* d = delta.mutable_data();
        const float* h = hidden.data();
        BatchStats s;
        {
          py::gil_scoped_release release;
          s = external_output_gradients(net, h, rows, y, d, compact);
        }
        py::dict stats;
        stats["loss"] = s.loss;
        stats["samples"] = s.samples;
        stats["active"] = s.active;
        stats["retrieved"] = s.retrieved;
        stats["staged_rows"] = net.batch_workspace().staged_ids.size();  // kept compact for the step
        return py::make_tuple(stats, delta);
      },
      py::arg("network"), py::arg("hidden"), py::arg("y_indptr"), py::arg("y_indices"), py::arg("compact") = true,
      "The output layer's gradients for a batch of top hidden activations (kept in the network until "
      "output_layer_step; compact=False accumulates them the plain way, the oracle of the compact one) and "
      "(stats, dL/dhidden) of each row's softmax cross-entropy, unscaled.");
  m.def(
      "output_layer_step",
      [](Network& net, float lr, std::int64_t samples, float gradient_scale) {
        SLIDE_REQUIRE(std::isfinite(lr) && lr >= 0.0f, "learning rate must be finite and >= 0, got " << lr);
        SLIDE_REQUIRE(std::isfinite(gradient_scale), "gradient scale must be finite, got " << gradient_scale);
        SLIDE_REQUIRE(samples >= 0, "samples must be >= 0, got " << samples);
        py::gil_scoped_release release;
        const std::int64_t nonfinite = external_output_step(net, lr, samples, gradient_scale);
        net.maintain_tables(samples);
        return nonfinite;
      },
      py::arg("network"), py::arg("lr"), py::arg("samples"), py::arg("gradient_scale") = 1.0f,
      "One optimizer step over the rows touched since the last, then the LSH tables' schedule; returns "
      "how many updated rows hold NaN or inf.");
  m.def(
      "output_layer_top_k",
      [](Network& net, const FloatArray& hidden, int k, bool normalizer, const std::string& scan_name,
         QuantizedCache* cache) {
        const std::size_t rows = hidden_rows(net, hidden);
        const std::uint32_t out = net.layers.back().size();
        SLIDE_REQUIRE(k >= 1 && static_cast<std::uint32_t>(k) <= out, "k must be in [1, " << out << "], got " << k);
        const Scan scan = parse_scan(scan_name, normalizer);
        const auto n = static_cast<py::ssize_t>(rows);
        py::array_t<std::int32_t> ids({n, static_cast<py::ssize_t>(k)});
        py::array_t<float> scores({n, static_cast<py::ssize_t>(k)});
        py::array_t<float> lse(normalizer ? n : 0);
        std::int32_t* ip = ids.mutable_data();
        float* sp = scores.mutable_data();
        float* lp = normalizer ? lse.mutable_data() : nullptr;
        const float* h = hidden.data();
        {
          py::gil_scoped_release release;
          top_k_of_hidden(net, h, static_cast<std::int64_t>(rows), k, ip, sp, lp, scan, cache);
        }
        return py::make_tuple(ids, scores, lse);
      },
      py::arg("network"), py::arg("hidden"), py::arg("k"), py::arg("normalizer") = false, py::arg("scan") = "auto",
      py::arg("cache") = static_cast<QuantizedCache*>(nullptr),
      "Exact top-k of every row of hidden over the whole output layer: (ids, scores, log-normalisers).");
}

}  // namespace slide::python
