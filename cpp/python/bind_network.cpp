#include <pybind11/stl.h>

#include <cmath>
#include <string>

#include "common/check.h"
#include "nn/network.h"
#include "python/bindings.h"
#include "python/csr_arrays.h"
#include "train/inference.h"
#include "train/step_team.h"
#include "train/trainer.h"

namespace slide::python {

namespace {

// A NumPy view of an aligned array; `owner` keeps the network alive while the view exists.
template <class T>
py::array view(AlignedArray<T>& a, std::vector<py::ssize_t> shape, std::vector<py::ssize_t> strides, py::handle owner) {
  return py::array_t<T>(shape, strides, a.data(), owner);
}

py::array matrix(AlignedArray<float>& a, const Parameters& p, py::handle owner) {
  return view(a, {p.rows, p.cols}, {static_cast<py::ssize_t>(p.stride * sizeof(float)), sizeof(float)}, owner);
}

// Accumulators not allocated yet (Parameters::ensure_gradients) hold no gradient: a read-only view
// of zeros of the matrix's shape, over one float, so that reading the state allocates nothing.
py::array no_gradient(const Parameters& p, py::handle owner) {
  static const float zero = 0.0f;
  py::array a = py::array_t<float>({static_cast<py::ssize_t>(p.rows), static_cast<py::ssize_t>(p.cols)},
                                   {py::ssize_t{0}, py::ssize_t{0}}, &zero, owner);
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

void add_parameters(py::dict& d, const std::string& prefix, Parameters& p, py::handle owner) {
  d[(prefix + "weight").c_str()] = matrix(p.weight, p, owner);
  d[(prefix + "weight_grad").c_str()] = p.has_gradients() ? matrix(p.grad, p, owner) : no_gradient(p, owner);
  const std::vector<std::string>& names = state_names(p.kind);
  for (std::size_t i = 0; i < names.size(); ++i) d[(prefix + names[i]).c_str()] = matrix(p.state[i], p, owner);
  if (p.row_bias) {
    const py::ssize_t n = p.rows;
    d[(prefix + "bias").c_str()] = view(p.bias, {n}, {sizeof(float)}, owner);
    d[(prefix + "bias_grad").c_str()] = view(p.bias_grad, {n}, {sizeof(float)}, owner);
    for (std::size_t i = 0; i < names.size(); ++i)
      d[(prefix + "bias_" + names[i]).c_str()] = view(p.bias_state[i], {n}, {sizeof(float)}, owner);
  }
}

py::dict state_arrays(Network& net, py::handle owner) {
  py::dict d;
  add_parameters(d, "input.", net.input.table, owner);
  add_parameters(d, "input.bias.", net.input.bias, owner);
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const std::string prefix = "layers." + std::to_string(i) + ".";
    add_parameters(d, prefix, net.layers[i].params, owner);
    NeuronIndex* idx = net.layers[i].index();
    if (!idx) continue;
    const py::ssize_t n = net.layers[i].size(), L = idx->config().l;
    const py::ssize_t B = idx->tables().num_buckets();
    const py::ssize_t u = sizeof(std::uint32_t);
    d[(prefix + "lsh.codes").c_str()] = view(idx->codes(), {L, n}, {n * u, u}, owner);
    d[(prefix + "lsh.order").c_str()] = view(idx->order(), {n}, {u}, owner);
    d[(prefix + "lsh.updates").c_str()] = view(idx->updates(), {n}, {1}, owner);
    d[(prefix + "lsh.offsets").c_str()] = view(idx->tables().offsets(), {L, B + 1}, {(B + 1) * u, u}, owner);
    d[(prefix + "lsh.ids").c_str()] = view(idx->tables().ids(), {L, n}, {n * u, u}, owner);
  }
  return d;
}

py::dict counters(Network& net) {
  py::dict d;
  d["step"] = net.step;
  d["samples_seen"] = net.samples_seen;
  py::list rng;
  for (int t = 0; t < net.threads(); ++t) rng.append(net.state(t).rng.state());
  d["rng"] = rng;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const NeuronIndex* idx = net.layers[i].index();
    if (!idx) continue;
    const IndexCounters& c = idx->counters();
    py::dict l;
    l["generation"] = c.generation;
    l["rehash_interval"] = c.rehash_interval;
    l["rebuild_interval"] = c.rebuild_interval;
    l["since_rehash"] = c.since_rehash;
    l["since_rebuild"] = c.since_rebuild;
    l["rehashes"] = c.rehashes;
    l["rehashed_neurons"] = c.rehashed_neurons;
    l["maintenance_seconds"] = c.maintenance_seconds;
    l["hashing_seconds"] = c.hashing_seconds;
    d[("layers." + std::to_string(i)).c_str()] = l;
  }
  return d;
}

void set_counters(Network& net, const py::dict& d) {
  net.step = d["step"].cast<std::int64_t>();
  net.samples_seen = d["samples_seen"].cast<std::int64_t>();
  // A checkpoint is untrusted: past this bound `++step` and the sample sums could overflow.
  SLIDE_REQUIRE(net.step >= 0 && net.step <= kMaxScheduleCount && net.samples_seen >= 0 &&
                    net.samples_seen <= kMaxScheduleCount,
                "counters: step " << net.step << " and samples_seen " << net.samples_seen << " must be in 0.."
                                  << kMaxScheduleCount);
  auto rng = d["rng"].cast<std::vector<std::uint64_t>>();
  SLIDE_REQUIRE(static_cast<int>(rng.size()) == net.threads(),
                "checkpoint has " << rng.size() << " thread RNG states, the network has " << net.threads() << " threads");
  for (int t = 0; t < net.threads(); ++t) net.state(t).rng.set_state(rng[t]);
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    NeuronIndex* idx = net.layers[i].index();
    if (!idx) continue;
    py::dict l = d[("layers." + std::to_string(i)).c_str()].cast<py::dict>();
    IndexCounters& c = idx->counters();
    c.generation = l["generation"].cast<std::int64_t>();
    c.rehash_interval = l["rehash_interval"].cast<std::int64_t>();
    c.rebuild_interval = l["rebuild_interval"].cast<std::int64_t>();
    c.since_rehash = l["since_rehash"].cast<std::int64_t>();
    c.since_rebuild = l["since_rebuild"].cast<std::int64_t>();
    c.rehashes = l["rehashes"].cast<std::int64_t>();
    c.rehashed_neurons = l["rehashed_neurons"].cast<std::int64_t>();
    c.maintenance_seconds = l["maintenance_seconds"].cast<double>();
    c.hashing_seconds = l["hashing_seconds"].cast<double>();
    try {
      idx->restore();
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("layers." + std::to_string(i) + "." + e.what());
    }
  }
}

py::dict batch_stats(const BatchStats& s) {
  py::dict d;
  d["loss"] = s.loss;
  d["samples"] = s.samples;
  d["active"] = s.active;
  d["retrieved"] = s.retrieved;
  d["nonfinite_rows"] = s.nonfinite_rows;
  d["exchanged_rows"] = s.exchanged_rows;
  d["exchanged_union"] = s.exchanged_union;
  d["exchanged_by_allreduce"] = s.exchanged_by_allreduce;
  return d;
}

}  // namespace

void bind_network(py::module_& m) {
  m.attr("DEFAULT_PARALLEL_WORK_FLOOR") = kDefaultParallelWorkFloor;
  m.def("parallel_work_floor", &parallel_work_floor,
        "Multiply-adds in a batch's forward pass below which a training step runs on one thread.");
  m.def("set_parallel_work_floor", &set_parallel_work_floor, py::arg("multiply_adds"));
  py::class_<QuantizedCache>(m, "QuantizedCache",
                             "The int8 scan's quantized output layer, kept while the weights are unchanged "
                             "(checked by a fingerprint of every weight on each use)")
      .def(py::init<>())
      .def_property_readonly("hits", &QuantizedCache::hits)
      .def_property_readonly("misses", &QuantizedCache::misses);
  py::class_<Network>(m, "Network")
      .def(py::init<const NetworkConfig&>(), py::arg("config"), py::call_guard<py::gil_scoped_release>())
      .def(
          "train_batch",
          [](Network& net, const IndptrArray& xp, const IndexArray& xi, const FloatArray& xd, const IndptrArray& yp,
             const IndexArray& yi, const RowArray& rows, float lr, bool apply) {
            SLIDE_REQUIRE(std::isfinite(lr) && lr >= 0.0f, "learning rate must be finite and >= 0, got " << lr);
            CsrFloat x = features_view(xp, xi, xd, net.config().input_dim, &rows);
            CsrIds y = labels_view(yp, yi, net.config().outputs(), &rows);
            SLIDE_REQUIRE(x.rows == y.rows, "X has " << x.rows << " rows but Y has " << y.rows);
            BatchStats s;
            {
              py::gil_scoped_release release;
              s = train_batch(net, x, y, rows.data(), rows.size(), lr, apply);
            }
            return batch_stats(s);
          },
          py::arg("x_indptr"), py::arg("x_indices"), py::arg("x_data"), py::arg("y_indptr"), py::arg("y_indices"),
          py::arg("rows"), py::arg("lr"), py::arg("apply") = true)
      .def_property_readonly("step", [](const Network& net) { return net.step; },
                             "optimizer steps taken so far (saved with the model)")
      .def("sync_low_precision", &Network::sync_low_precision, py::call_guard<py::gil_scoped_release>())
      .def(
          "predict",
          [](Network& net, const IndptrArray& xp, const IndexArray& xi, const FloatArray& xd, int k, bool dense,
             bool normalizer, const std::string& scan_name, QuantizedCache* cache) {
            const std::uint32_t out = net.config().layers.back().size;
            SLIDE_REQUIRE(k >= 1 && static_cast<std::uint32_t>(k) <= out, "k must be in [1, " << out << "], got " << k);
            SLIDE_REQUIRE(dense || !normalizer, "the softmax normaliser needs dense (exact) prediction");
            const Scan scan = parse_scan(scan_name, normalizer);
            CsrFloat x = features_view(xp, xi, xd, net.config().input_dim, nullptr);
            py::array_t<std::int32_t> ids({static_cast<py::ssize_t>(x.rows), static_cast<py::ssize_t>(k)});
            py::array_t<float> scores({static_cast<py::ssize_t>(x.rows), static_cast<py::ssize_t>(k)});
            py::array_t<float> lse(normalizer ? static_cast<py::ssize_t>(x.rows) : 0);
            std::int32_t* ip = ids.mutable_data();
            float* sp = scores.mutable_data();
            float* lp = normalizer ? lse.mutable_data() : nullptr;
            {
              py::gil_scoped_release release;
              predict_top_k(net, x, k, dense, ip, sp, lp, scan, cache);
            }
            if (normalizer) return py::tuple(py::make_tuple(ids, scores, lse));
            return py::tuple(py::make_tuple(ids, scores));
          },
          py::arg("x_indptr"), py::arg("x_indices"), py::arg("x_data"), py::arg("k"), py::arg("dense"),
          py::arg("normalizer") = false, py::arg("scan") = "auto", py::arg("cache") = static_cast<QuantizedCache*>(nullptr))
      .def(
          "hidden",
          [](Network& net, const IndptrArray& xp, const IndexArray& xi, const FloatArray& xd) {
            CsrFloat x = features_view(xp, xi, xd, net.config().input_dim, nullptr);
            const auto width = static_cast<py::ssize_t>(net.layers.back().params.cols);
            py::array_t<float> out({static_cast<py::ssize_t>(x.rows), width});
            float* o = out.mutable_data();
            {
              py::gil_scoped_release release;
              hidden_representation(net, x, o);
            }
            return out;
          },
          py::arg("x_indptr"), py::arg("x_indices"), py::arg("x_data"),
          "The top hidden layer's activations, one row per sample.")
      .def(
          "mean_loss",
          [](Network& net, const IndptrArray& xp, const IndexArray& xi, const FloatArray& xd, const IndptrArray& yp,
             const IndexArray& yi) {
            CsrFloat x = features_view(xp, xi, xd, net.config().input_dim, nullptr);
            CsrIds y = labels_view(yp, yi, net.config().layers.back().size, nullptr);
            SLIDE_REQUIRE(x.rows == y.rows, "X has " << x.rows << " rows but Y has " << y.rows);
            py::gil_scoped_release release;
            return mean_loss(net, x, y);
          })
      .def(
          "output_activations",
          [](Network& net, const IndptrArray& xp, const IndexArray& xi, const FloatArray& xd, const IndptrArray& yp,
             const IndexArray& yi, std::int64_t row, bool train_mode) {
            RowArray rows(std::vector<py::ssize_t>{1});
            rows.mutable_data()[0] = row;
            CsrFloat x = features_view(xp, xi, xd, net.config().input_dim, &rows);
            CsrIds y = labels_view(yp, yi, net.config().layers.back().size, &rows);
            ThreadState& ts = net.state(0);
            net.infer(ts, sample_at(x, &y, row), train_mode ? Mode::kTrain : Mode::kInferDense, 0, ts.rng);
            const Activations& out = ts.layers.back().out;
            py::array_t<std::int64_t> ids(out.count);
            py::array_t<float> values(out.count);
            for (std::uint32_t p = 0; p < out.count; ++p) {
              ids.mutable_data()[p] = out.id(p);
              values.mutable_data()[p] = out.values[p];
            }
            return py::make_tuple(ids, values);
          },
          "One sample's output-layer (ids, logits): the training active set or every neuron.")
      .def("state", [](py::object self) { return state_arrays(self.cast<Network&>(), self); },
           "Views of every parameter, optimizer moment, gradient buffer and LSH table (writable, no copy).")
      .def("counters", &counters)
      .def("set_counters", &set_counters)
      .def("clear_gradients", &Network::clear_gradients)
      .def("rebuild_tables", &Network::rebuild_tables, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("memory_bytes", &Network::memory_bytes)
      .def_property_readonly("threads", &Network::threads);
}

}  // namespace slide::python
