#include "nn/fc_layer.h"

#include <algorithm>

#include "simd/kernels.h"

namespace slide {

FcLayer::FcLayer(const LayerConfig& c, std::uint32_t input_dim, OptimizerKind kind, bool is_output, std::uint64_t seed,
                 int threads, bool deferred_gradients)
    : params(c.size, input_dim, kind, /*row_bias=*/true, deferred_gradients), is_output_(is_output) {
  if (c.sampled) index_ = std::make_unique<NeuronIndex>(c.lsh, c.size, static_cast<int>(input_dim), seed, threads);
}

void FcLayer::prepare(LayerScratch& s) const {
  if (params.has_bf16()) s.input_bf16.assign(params.cols, 0);
  if (!index_) return;
  s.builder = std::make_unique<ActiveSetBuilder>(params.rows, index_->config().l);
  index_->family().prepare(s.hash);
  s.buckets.resize(index_->config().l);
  s.dense_input.assign(params.cols, 0.0f);
  s.out.ids.reserve(1024);
}

void FcLayer::choose_active(const Activations& in, LayerScratch& s, Mode mode, const std::int32_t* labels,
                            int num_labels, const NegativePool& pool, int min_active, Rng& rng) const {
  const LshConfig& c = index_->config();
  const float* query = in.values.data();
  if (!in.dense) {  // hash families read a full-width vector
    for (std::uint32_t p = 0; p < in.count; ++p) s.dense_input[in.ids[p]] = in.values[p];
    query = s.dense_input.data();
  }
  index_->family().buckets(query, s.buckets.data(), s.hash);
  if (!in.dense)
    for (std::uint32_t p = 0; p < in.count; ++p) s.dense_input[in.ids[p]] = 0.0f;
  if (mode != Mode::kTrain) num_labels = 0;
  s.retrieved += s.builder->build(index_->tables(), s.buckets.data(), labels, num_labels,
                                  mode == Mode::kTrain ? pool : NegativePool{}, std::max(c.min_active, min_active),
                                  c.max_active, rng, s.out.ids);
  s.out.set_sparse_from_ids();
}

void FcLayer::forward(const Activations& in, LayerScratch& s, Mode mode, const std::int32_t* labels, int num_labels,
                      const NegativePool& pool, int min_active, Rng& rng) const {
  if (index_ && mode != Mode::kInferDense) {
    choose_active(in, s, mode, labels, num_labels, pool, min_active, rng);
  } else {
    s.out.set_dense(params.rows);
  }
  const Kernels& k = kernels();
  Activations& out = s.out;
  const bool bf16 = params.has_bf16() && in.dense;
  if (bf16) k.to_bf16(in.values.data(), s.input_bf16.data(), in.count);
  for (std::uint32_t p = 0; p < out.count; ++p) {
    const std::uint32_t j = out.id(p);
    const float* w = params.row(j);
    float z = params.bias[j];
    if (bf16) {
      z += k.dot_bf16(params.row_bf16(j), s.input_bf16.data(), in.count);
    } else if (in.dense) {
      z += k.dot(w, in.values.data(), in.count);
    } else {
      for (std::uint32_t q = 0; q < in.count; ++q) z += w[in.ids[q]] * in.values[q];
    }
    out.values[p] = (is_output_ || z > 0.0f) ? z : 0.0f;
  }
}

void FcLayer::backward(Activations& in, LayerScratch& s, bool input_delta) {
  const Kernels& k = kernels();
  Activations& out = s.out;
  const bool track_rows = index_ != nullptr;  // a dense layer updates every row anyway
  for (std::uint32_t p = 0; p < out.count; ++p) {
    const float d = out.delta[p];
    if (d == 0.0f) continue;
    const std::uint32_t j = out.id(p);
    const float* w = params.row(j);
    float* g = params.grad_row(j);
    if (in.dense) {
      if (input_delta && params.has_bf16()) {
        k.axpy_bf16(d, params.row_bf16(j), in.delta.data(), in.count);
      } else if (input_delta) {
        k.axpy(d, w, in.delta.data(), in.count);
      }
      k.axpy(d, in.values.data(), g, in.count);
    } else {
      for (std::uint32_t q = 0; q < in.count; ++q) {
        const std::uint32_t i = in.ids[q];
        if (input_delta) in.delta[q] += d * w[i];
        g[i] += d * in.values[q];
      }
    }
    params.bias_grad[j] += d;
    if (track_rows && params.claim(j)) {
      s.touched.push_back(j);
      index_->mark_updated(j);
    }
  }
}

void FcLayer::accumulate_gathered_row(const Kernels& k, std::uint32_t j, const float* g, float bias_g,
                                      std::vector<std::uint32_t>& touched) {
  if (params.row_bias) params.bias_grad[j] += bias_g;
  k.axpy(1.0f, g, params.grad_row(j), params.cols);
  if (params.claim(j)) {
    touched.push_back(j);
    index_->mark_updated(j);
  }
}

bool FcLayer::step_gathered_row(const OptimizerStep& s, const Kernels& k, std::uint32_t j, float* g, float* bias_g) {
  const bool nonfinite = params.step_row(s, k, j, g, bias_g);
  index_->mark_updated(j);
  return nonfinite;
}

}  // namespace slide
