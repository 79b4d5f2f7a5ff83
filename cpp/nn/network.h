// The network: input embedding, fully connected layers (dense or LSH-sampled), softmax output.
// Works on one sample at a time inside a HOGWILD thread; gradients are summed into shared
// buffers and applied by `apply_updates` at the batch boundary.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/aligned_array.h"
#include "common/sparse_view.h"
#include "distributed/collective.h"
#include "nn/batch_workspace.h"
#include "nn/fc_layer.h"
#include "nn/input_layer.h"
#include "nn/network_config.h"
#include "nn/thread_state.h"

namespace slide {

class Network {
 public:
  explicit Network(const NetworkConfig& config);

  // Forward + backward for one training sample; returns its loss (0 for a sample without labels).
  float train_sample(ThreadState& ts, const SampleView& s);
  // Forward only; the output layer's activations are left in ts.layers.back().out.
  // `rng` feeds the random top-up of sampled layers.
  void infer(ThreadState& ts, const SampleView& s, Mode mode, int min_active, Rng& rng);
  // The input layer and the hidden FC layers (all but the output); returns the top hidden activations.
  const Activations& forward_hidden(ThreadState& ts, const SampleView& s, Mode mode, Rng& rng);
  Activations& top_hidden(ThreadState& ts);
  // The features the embedding sees: `s` itself, or (l2_normalize_input, input_dropout while
  // training) a transformed copy in ts. The dropout mask is a hash of (seed, step, row, position),
  // so a sample's backward pass, or its forward pass recomputed on another thread, drops the same
  // features as its forward pass did.
  SampleView input_view(ThreadState& ts, const SampleView& s, bool training) const;
  // Back-propagates from top_hidden(ts).delta (dL/d its values) through ReLU, the hidden FC layers
  // and the embedding, accumulating their gradients. Needs the activations of forward_hidden.
  void backward_hidden(ThreadState& ts, const SampleView& s);
  // Softmax cross-entropy of the output activations against the labels (dense or active set).
  float loss_of(ThreadState& ts, const SampleView& s) const;  // ts: its output activations and scratch

  // Collects the batch's label union, from which sampled output layers draw shared negatives.
  void prepare_batch(const CsrIds& y, const std::int64_t* rows, std::int64_t count);

  // Optimizer step over the rows touched since the last call; `samples` is the batch size, so the
  // step follows the gradient of the batch's mean loss, times `gradient_scale` (the factor a caller
  // outside, such as autograd, put on that loss). Returns how many updated rows hold a NaN or inf
  // afterwards (0 unless training diverged).
  std::int64_t apply_updates(float lr, std::int64_t samples, float gradient_scale = 1.0f);
  // Refresh the BF16 weight copies (precision="bf16") after the fp32 weights were written directly.
  void sync_low_precision();
  // Rehash / rebuild the sampled layers when their schedule says so.
  void maintain_tables(std::int64_t samples);
  void rebuild_tables();
  // Drops every gradient waiting for a step (the accumulators', and a compact batch's).
  void clear_gradients();

  const NetworkConfig& config() const { return config_; }
  int threads() const { return config_.threads; }  // thread states, and the most any region uses
  // The threads the training step under way shares (train/step_team.h): threads(), or one for a
  // step too small to split. Outside a step, threads().
  int step_threads() const { return step_threads_ ? step_threads_ : config_.threads; }
  void set_step_threads(int threads) { step_threads_ = threads; }  // 0: threads()
  ThreadState& state(int t) { return *states_[t]; }
  std::size_t memory_bytes() const;
  // slide::trains_shared_batches of this network's config (nn/network_config.h).
  bool trains_shared_batches() const;
  BatchWorkspace& batch_workspace();
  // The output layer's rows rounded to BF16 for an exact scan (train/inference.cpp), rewritten by
  // every scan and kept between them: one new buffer a scan cost its pages' first touch each time.
  AlignedArray<bf16>& scan_weights_bf16() { return scan_weights_bf16_; }
  // Under MPI, the ranks this network trains with (it holds config().output_shard of the output
  // layer); null for a single process.
  void set_collective(std::shared_ptr<Collective> c) { collective_ = std::move(c); }
  Collective* collective() const { return collective_.get(); }

  InputLayer input;
  std::vector<FcLayer> layers;
  std::int64_t step = 0;          // optimizer steps taken
  std::int64_t samples_seen = 0;

 private:
  // A sampled layer's active-set floor in training (its LSH settings' late_min_active schedule).
  int training_floor(const FcLayer& layer, Mode mode) const;
  void init_weights();
  std::unique_ptr<ThreadState> make_state(int thread) const;

  NetworkConfig config_;
  std::vector<std::unique_ptr<ThreadState>> states_;
  std::vector<std::uint32_t> batch_labels_;
  std::vector<std::uint8_t> in_batch_;  // output-width marks, reset after each batch
  NegativePool pool_;
  std::unique_ptr<BatchWorkspace> workspace_;
  AlignedArray<bf16> scan_weights_bf16_;
  std::shared_ptr<Collective> collective_;
  int step_threads_ = 0;
};

}  // namespace slide
