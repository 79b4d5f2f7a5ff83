#include "nn/network.h"

#include <algorithm>
#include <cmath>

#include "common/parallel.h"
#include "common/rng.h"
#include "simd/kernels.h"

namespace slide {

Network::Network(const NetworkConfig& config)
    // validate() runs first: the input layer's sizes come from the config.
    : input((validate(config), config.input_dim), config.layers[0].size, config.optimizer.kind), config_(config) {
  std::uint32_t prev = config.layers[0].size;
  layers.reserve(config.layers.size() - 1);
  for (std::size_t i = 1; i < config.layers.size(); ++i) {
    const bool is_output = i + 1 == config.layers.size();
    layers.emplace_back(config.layers[i], prev, config.optimizer.kind, is_output,
                        mix64(config.seed + 0x1000 * i), config.threads,
                        is_output && defers_output_gradients(config));
    prev = config.layers[i].size;
  }
  init_weights();
  if (config.bf16_weights) {
    input.table.enable_bf16(config.threads);
    for (FcLayer& l : layers) l.params.enable_bf16(config.threads);
  }
  rebuild_tables();
  for (int t = 0; t < config_.threads; ++t) states_.push_back(make_state(t));
}

std::unique_ptr<ThreadState> Network::make_state(int thread) const {
  auto ts = std::make_unique<ThreadState>(config_.seed + static_cast<std::uint64_t>(thread));
  ts->layers.resize(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) layers[i].prepare(ts->layers[i]);
  return ts;
}

void Network::init_weights() {
  // Row r of a matrix draws from its own generator, so initialisation is parallel and still a
  // function of the seed alone.
  // An output shard's rows draw as the same rows of the whole layer: a sharded network starts where
  // the single-process one does.
  auto init = [this](Parameters& p, float stddev, std::uint64_t salt, std::uint32_t first_row = 0) {
    parallel_for(config_.threads, static_cast<std::int64_t>(p.rows), [&](std::int64_t r) {
      Rng rng(mix64(config_.seed ^ salt) + static_cast<std::uint64_t>(r) + first_row);
      float* w = p.row(static_cast<std::uint32_t>(r));
      for (std::uint32_t c = 0; c < p.cols; ++c) w[c] = stddev * rng.normal();
    });
  };
  init(input.table, 0.1f, 0x11);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const float fan_in = static_cast<float>(layers[i].params.cols);
    const float stddev = layers[i].is_output() ? 1.0f / std::sqrt(fan_in) : std::sqrt(2.0f / fan_in);
    init(layers[i].params, stddev, 0x22 + i, layers[i].is_output() ? config_.output_shard.offset : 0);
  }
}

void Network::sync_low_precision() {
  input.table.sync_bf16(config_.threads);
  for (FcLayer& l : layers) l.params.sync_bf16(config_.threads);
}

void Network::rebuild_tables() {
  for (FcLayer& l : layers)
    if (l.index()) l.index()->rebuild(l.params.weight.data(), l.params.stride);
}

std::size_t Network::memory_bytes() const {
  std::size_t total = input.table.memory_bytes() + input.bias.memory_bytes();
  for (const FcLayer& l : layers) total += l.params.memory_bytes() + (l.index() ? l.index()->memory_bytes() : 0);
  return total;
}

SampleView Network::input_view(ThreadState& ts, const SampleView& s, bool training) const {
  const bool drop = training && config_.input_dropout > 0.0f;
  if (!drop && !config_.l2_normalize_input) return s;
  ts.input_ids.clear();
  ts.input_values.clear();
  // Keep a feature when the top 32 bits of its hash fall below (1 - p) * 2^32.
  const std::uint64_t threshold = static_cast<std::uint64_t>((1.0 - config_.input_dropout) * 4294967296.0);
  const std::uint64_t key = mix64(config_.seed ^ mix64(static_cast<std::uint64_t>(step) * 0x9e3779b97f4a7c15ULL +
                                                       static_cast<std::uint64_t>(s.key)));
  double squares = 0.0;
  if (config_.l2_normalize_input)
    for (int i = 0; i < s.num_features; ++i) squares += static_cast<double>(s.feature_values[i]) * s.feature_values[i];
  float scale = config_.l2_normalize_input && squares > 0.0 ? static_cast<float>(1.0 / std::sqrt(squares)) : 1.0f;
  if (drop) scale *= static_cast<float>(1.0 / (1.0 - config_.input_dropout));  // inverted dropout: same mean
  for (int i = 0; i < s.num_features; ++i) {
    if (drop && (mix64(key + static_cast<std::uint64_t>(i)) >> 32) >= threshold) continue;
    ts.input_ids.push_back(s.feature_ids[i]);
    ts.input_values.push_back(s.feature_values[i]);
  }
  for (float& v : ts.input_values) v *= scale;
  SampleView out = s;
  out.feature_ids = ts.input_ids.data();
  out.feature_values = ts.input_values.data();
  out.num_features = static_cast<std::int32_t>(ts.input_ids.size());
  return out;
}

const Activations& Network::forward_hidden(ThreadState& ts, const SampleView& s, Mode mode, Rng& rng) {
  input.forward(input_view(ts, s, mode == Mode::kTrain), ts.hidden0);
  const Activations* in = &ts.hidden0;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
    layers[i].forward(*in, ts.layers[i], mode, nullptr, 0, NegativePool{}, training_floor(layers[i], mode), rng);
    in = &ts.layers[i].out;
  }
  return *in;
}

int Network::training_floor(const FcLayer& layer, Mode mode) const {
  if (mode != Mode::kTrain || !layer.sampled()) return 0;
  return training_min_active(layer.index()->config(), samples_seen);
}

Activations& Network::top_hidden(ThreadState& ts) {
  return layers.size() == 1 ? ts.hidden0 : ts.layers[layers.size() - 2].out;
}

bool Network::trains_shared_batches() const { return slide::trains_shared_batches(config_); }

BatchWorkspace& Network::batch_workspace() {
  if (!workspace_) workspace_ = std::make_unique<BatchWorkspace>();
  return *workspace_;
}

void Network::infer(ThreadState& ts, const SampleView& s, Mode mode, int min_active, Rng& rng) {
  const Activations& in = forward_hidden(ts, s, mode, rng);
  layers.back().forward(in, ts.layers.back(), mode, s.labels, s.num_labels, pool_,
                        std::max(min_active, training_floor(layers.back(), mode)), rng);
}

void Network::backward_hidden(ThreadState& ts, const SampleView& s) {
  auto relu_backward = [](Activations& a) {  // a select, not a branch: it vectorises, and half the signs are random
    float* delta = a.delta.data();
    const float* values = a.values.data();
    for (std::uint32_t p = 0; p < a.count; ++p) delta[p] = values[p] <= 0.0f ? 0.0f : delta[p];
  };
  for (std::size_t i = layers.size() - 1; i-- > 0;) {  // the hidden FC layers, top down
    relu_backward(ts.layers[i].out);
    Activations& in = i == 0 ? ts.hidden0 : ts.layers[i - 1].out;
    std::fill(in.delta.begin(), in.delta.begin() + in.count, 0.0f);
    layers[i].backward(in, ts.layers[i], /*input_delta=*/true);
  }
  relu_backward(ts.hidden0);
  input.backward(input_view(ts, s, /*training=*/true), ts.hidden0.delta.data(), ts.input_touched);
}

namespace {

// Labels sit at their own index in a dense output and first, in order, in a sampled one.
std::uint32_t label_position(const Activations& out, const SampleView& s, int i) {
  return out.dense ? static_cast<std::uint32_t>(s.labels[i]) : static_cast<std::uint32_t>(i);
}

}  // namespace

float Network::loss_of(ThreadState& ts, const SampleView& s) const {
  const Activations& out = ts.layers.back().out;
  if (s.num_labels == 0 || out.count == 0) return 0.0f;
  float mx = out.values[0];
  for (std::uint32_t p = 1; p < out.count; ++p) mx = std::max(mx, out.values[p]);
  double sum = 0.0;
  for (std::uint32_t p = 0; p < out.count; ++p) sum += std::exp(static_cast<double>(out.values[p] - mx));
  double loss = 0.0;
  if (config_.output_loss == OutputLoss::kDecoupled) {
    std::vector<double>& label_exp = ts.label_exp;
    label_exp.resize(static_cast<std::size_t>(s.num_labels));
    for (int i = 0; i < s.num_labels; ++i)
      label_exp[i] = std::exp(static_cast<double>(out.values[label_position(out, s, i)] - mx));
    const DecoupledTerms terms = decoupled_terms(label_exp.data(), label_exp.size(), sum);
    for (double e : label_exp) loss -= std::log(std::max(terms.probability(e), 1e-300));
    return static_cast<float>(loss / s.num_labels);
  }
  const double log_z = mx + std::log(sum);
  for (int i = 0; i < s.num_labels; ++i) loss += log_z - out.values[label_position(out, s, i)];
  return static_cast<float>(loss / s.num_labels);
}

float Network::train_sample(ThreadState& ts, const SampleView& s) {
  if (s.num_labels == 0) return 0.0f;  // no target: nothing to learn from this sample
  infer(ts, s, Mode::kTrain, 0, ts.rng);
  // The loss over the active outputs (nn/output_loss.h), from delta = e_n = exp(z_n - max).
  LayerScratch& top = ts.layers.back();
  Activations& out = top.out;
  const Kernels& k = kernels();
  const float sum = k.exp_sum(out.values.data(), out.delta.data(), out.count, k.max_value(out.values.data(), out.count));
  const float target = 1.0f / static_cast<float>(s.num_labels);
  double loss = 0.0;
  if (config_.output_loss == OutputLoss::kDecoupled) {
    std::vector<double>& label_exp = ts.label_exp;
    label_exp.resize(static_cast<std::size_t>(s.num_labels));
    for (int i = 0; i < s.num_labels; ++i) label_exp[i] = out.delta[label_position(out, s, i)];
    const DecoupledTerms terms = decoupled_terms(label_exp.data(), label_exp.size(), sum);
    const float scale = static_cast<float>(terms.scale);
    for (std::uint32_t p = 0; p < out.count; ++p) out.delta[p] *= scale;
    for (int i = 0; i < s.num_labels; ++i) {
      const double q = terms.probability(label_exp[i]);
      loss -= std::log(std::max(q, 1e-300));
      out.delta[label_position(out, s, i)] = target * static_cast<float>(q - 1.0);
    }
  } else {
    const float inv = 1.0f / sum;
    for (std::uint32_t p = 0; p < out.count; ++p) out.delta[p] *= inv;
    for (int i = 0; i < s.num_labels; ++i) {
      const std::uint32_t p = label_position(out, s, i);
      loss -= std::log(std::max(out.delta[p], 1e-30f));
      out.delta[p] -= target;
    }
  }
  ts.active += out.count;

  Activations& in = top_hidden(ts);
  std::fill(in.delta.begin(), in.delta.begin() + in.count, 0.0f);
  layers.back().backward(in, top, /*input_delta=*/true);
  backward_hidden(ts, s);
  ++ts.samples;
  return static_cast<float>(loss / s.num_labels);
}

void Network::prepare_batch(const CsrIds& y, const std::int64_t* rows, std::int64_t count) {
  const FcLayer& out = layers.back();
  pool_ = NegativePool{};
  if (!out.sampled() || out.index()->config().batch_negatives == 0) return;
  if (in_batch_.empty()) in_batch_.assign(out.size(), 0);
  batch_labels_.clear();
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t p = y.indptr[rows[i]]; p < y.indptr[rows[i] + 1]; ++p) {
      const std::uint32_t id = static_cast<std::uint32_t>(y.indices[p]);
      if (!in_batch_[id]) {
        in_batch_[id] = 1;
        batch_labels_.push_back(id);
      }
    }
  for (std::uint32_t id : batch_labels_) in_batch_[id] = 0;
  pool_ = NegativePool{batch_labels_.data(), static_cast<std::uint32_t>(batch_labels_.size()),
                       out.index()->config().batch_negatives};
}

std::int64_t Network::apply_updates(float lr, std::int64_t samples, float gradient_scale) {
  if (samples <= 0) return 0;
  ++step;
  samples_seen += samples;
  const float scale = gradient_scale / static_cast<float>(samples);
  const OptimizerConfig& opt = config_.optimizer;
  const int T = step_threads();
  std::vector<const std::vector<std::uint32_t>*> lists;
  for (auto& ts : states_) lists.push_back(&ts->input_touched);
  std::int64_t nonfinite = input.table.update(lists, opt, lr, step, scale, T);
  nonfinite += input.bias.update_all(opt, lr, step, scale, T);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].sampled()) {  // a dense layer's every row has gradient
      nonfinite += layers[i].params.update_all(opt, lr, step, scale, T);
      continue;
    }
    lists.clear();
    for (auto& ts : states_) lists.push_back(&ts->layers[i].touched);
    nonfinite += layers[i].params.update(lists, opt, lr, step, scale, T);
  }
  for (auto& ts : states_) {
    ts->input_touched.clear();
    for (LayerScratch& l : ts->layers) l.touched.clear();
  }
  return nonfinite;
}

void Network::maintain_tables(std::int64_t samples) {
  for (FcLayer& l : layers)
    if (l.index()) l.index()->after_batch(samples, l.params.weight.data(), l.params.stride);
}

void Network::clear_gradients() {
  input.table.clear_gradients();
  input.bias.clear_gradients();
  for (FcLayer& l : layers) l.params.clear_gradients();
  if (workspace_) workspace_->staged_ids.clear();
  for (auto& ts : states_) {
    ts->input_touched.clear();
    for (LayerScratch& s : ts->layers) s.touched.clear();
  }
}

}  // namespace slide
