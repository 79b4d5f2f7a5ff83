#include "lsh/lsh_config.h"
#include "nn/memory_estimate.h"
#include "nn/network_config.h"
#include "python/bindings.h"

#include <pybind11/stl.h>

namespace slide::python {

void bind_config(py::module_& m) {
  py::enum_<HashKind>(m, "HashKind")
      .value("simhash", HashKind::kSimHash)
      .value("wta", HashKind::kWta)
      .value("dwta", HashKind::kDwta)
      .value("minhash", HashKind::kMinHash);
  py::enum_<BucketPolicy>(m, "BucketPolicy").value("fifo", BucketPolicy::kFifo).value("reservoir", BucketPolicy::kReservoir);
  py::enum_<SparseExchange>(m, "SparseExchange")
      .value("auto", SparseExchange::kAuto)
      .value("allgather", SparseExchange::kAllgather)
      .value("allreduce", SparseExchange::kAllreduce);
  py::enum_<OutputLoss>(m, "OutputLoss")
      .value("softmax", OutputLoss::kSoftmax)
      .value("decoupled", OutputLoss::kDecoupled);
  py::class_<OutputShard>(m, "OutputShard")
      .def(py::init<>())
      .def_readwrite("offset", &OutputShard::offset)
      .def_readwrite("total", &OutputShard::total);
  py::enum_<OptimizerKind>(m, "OptimizerKind")
      .value("adam", OptimizerKind::kAdam)
      .value("sgd", OptimizerKind::kSgd)
      .value("adagrad", OptimizerKind::kAdagrad);
  m.def("optimizer_state_names", [](OptimizerKind kind) { return state_names(kind); },
        "The arrays the optimizer keeps beside each weight array, as model files name them.");

  py::class_<LshConfig>(m, "LshConfig")
      .def(py::init<>())
      .def_readwrite("family", &LshConfig::family)
      .def_readwrite("k", &LshConfig::k)
      .def_readwrite("l", &LshConfig::l)
      .def_readwrite("range_bits", &LshConfig::range_bits)
      .def_readwrite("bin_size", &LshConfig::bin_size)
      .def_readwrite("bucket_size", &LshConfig::bucket_size)
      .def_readwrite("policy", &LshConfig::policy)
      .def_readwrite("simhash_density", &LshConfig::simhash_density)
      .def_readwrite("minhash_topk", &LshConfig::minhash_topk)
      .def_readwrite("min_active", &LshConfig::min_active)
      .def_readwrite("max_active", &LshConfig::max_active)
      .def_readwrite("batch_negatives", &LshConfig::batch_negatives)
      .def_readwrite("batch_active", &LshConfig::batch_active)
      .def_readwrite("rehash_every", &LshConfig::rehash_every)
      .def_readwrite("rebuild_every", &LshConfig::rebuild_every)
      .def_readwrite("rehash_min_updates", &LshConfig::rehash_min_updates)
      .def_readwrite("schedule_growth", &LshConfig::schedule_growth)
      .def_readwrite("late_min_active", &LshConfig::late_min_active)
      .def_readwrite("late_after", &LshConfig::late_after)
      .def_property_readonly("effective_range_bits", [](const LshConfig& c) { return effective_range_bits(c); });

  py::class_<LayerConfig>(m, "LayerConfig")
      .def(py::init<>())
      .def_readwrite("size", &LayerConfig::size)
      .def_readwrite("sampled", &LayerConfig::sampled)
      .def_readwrite("lsh", &LayerConfig::lsh);

  py::class_<OptimizerConfig>(m, "OptimizerConfig")
      .def(py::init<>())
      .def_readwrite("kind", &OptimizerConfig::kind)
      .def_readwrite("beta1", &OptimizerConfig::beta1)
      .def_readwrite("beta2", &OptimizerConfig::beta2)
      .def_readwrite("eps", &OptimizerConfig::eps);

  py::class_<NetworkConfig>(m, "NetworkConfig")
      .def(py::init<>())
      .def_readwrite("input_dim", &NetworkConfig::input_dim)
      .def_readwrite("layers", &NetworkConfig::layers)
      .def_readwrite("optimizer", &NetworkConfig::optimizer)
      .def_readwrite("threads", &NetworkConfig::threads)
      .def_readwrite("seed", &NetworkConfig::seed)
      .def_readwrite("bf16_weights", &NetworkConfig::bf16_weights)
      .def_readwrite("bf16_matmul", &NetworkConfig::bf16_matmul)
      .def_readwrite("l2_normalize_input", &NetworkConfig::l2_normalize_input)
      .def_readwrite("input_dropout", &NetworkConfig::input_dropout)
      .def_readwrite("output_loss", &NetworkConfig::output_loss)
      .def_readwrite("output_shard", &NetworkConfig::output_shard)
      .def_readwrite("sparse_exchange", &NetworkConfig::sparse_exchange);
  m.def("estimate_memory", [](const NetworkConfig& c, std::size_t batch_size) {
    validate(c);
    const MemoryEstimate e = estimate_memory(c, batch_size);
    return py::dict(py::arg("parameters") = e.parameters, py::arg("lsh") = e.lsh, py::arg("scratch") = e.scratch,
                    py::arg("total") = e.total());
  });
}

}  // namespace slide::python
