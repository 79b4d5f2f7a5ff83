// A fully connected layer (row per output neuron), dense or sampled by LSH. A hidden layer applies
// ReLU; the output layer leaves logits for the softmax. With every neuron active, the sampled and
// the dense path run the same arithmetic, which is what the tests check.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "lsh/neuron_index.h"
#include "nn/activations.h"
#include "nn/layer_scratch.h"
#include "nn/network_config.h"
#include "nn/parameters.h"

namespace slide {

enum class Mode {
  kTrain,        // sampled layers: labels + LSH candidates (+ top-up)
  kInferSparse,  // sampled layers: LSH candidates (+ top-up), no labels
  kInferDense,   // every layer computes every neuron
};

class FcLayer {
 public:
  FcLayer(const LayerConfig& c, std::uint32_t input_dim, OptimizerKind kind, bool is_output, std::uint64_t seed,
          int threads, bool deferred_gradients = false);

  void prepare(LayerScratch& s) const;
  // Chooses the active neurons for this sample and computes their outputs.
  void forward(const Activations& in, LayerScratch& s, Mode mode, const std::int32_t* labels, int num_labels,
               const NegativePool& pool, int min_active, Rng& rng) const;
  // Accumulates gradients for the active rows from s.out.delta; adds dL/d(input) into in.delta.
  void backward(Activations& in, LayerScratch& s, bool input_delta);
  // A sampled layer's row `j` with a batch's gradient gathered for it (`g`, cols floats, and
  // `bias_g`), either added to the accumulators and claimed for the next step (into `touched` the
  // first time), or stepped at once (`g` and `bias_g` zeroed; returns whether the row holds NaN or
  // inf). Either way the row counts once towards its rehash.
  void accumulate_gathered_row(const Kernels& k, std::uint32_t j, const float* g, float bias_g,
                               std::vector<std::uint32_t>& touched);
  bool step_gathered_row(const OptimizerStep& s, const Kernels& k, std::uint32_t j, float* g, float* bias_g);

  bool sampled() const { return index_ != nullptr; }
  bool is_output() const { return is_output_; }
  std::uint32_t size() const { return params.rows; }
  NeuronIndex* index() { return index_.get(); }
  const NeuronIndex* index() const { return index_.get(); }

  Parameters params;

 private:
  void choose_active(const Activations& in, LayerScratch& s, Mode mode, const std::int32_t* labels, int num_labels,
                     const NegativePool& pool, int min_active, Rng& rng) const;

  bool is_output_;
  std::unique_ptr<NeuronIndex> index_;
};

}  // namespace slide
