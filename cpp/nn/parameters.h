// One weight matrix with its bias, optimizer moments and gradient accumulators. Rows are padded
// to 64 bytes. Gradients are summed into `grad` by HOGWILD threads without locks (a lost update
// now and then is the accepted price, as in SLIDE); the rows that received gradient are collected
// once each via an atomic flag so the optimizer visits only them.
#pragma once
#include <cstdint>
#include <vector>

#include "common/aligned_array.h"
#include "optim/optimizer.h"
#include "simd/kernels.h"

namespace slide {

class Parameters {
 public:
  // `deferred_gradients`: `grad` stays unallocated until ensure_gradients (nn/network_config.h,
  // defers_output_gradients): at 670,091 outputs x hidden 256 it is 686 MB that a batch-shared
  // output layer in one process never touches.
  Parameters(std::uint32_t rows, std::uint32_t cols, OptimizerKind kind, bool row_bias = true,
             bool deferred_gradients = false);

  float* row(std::uint32_t r) { return weight.data() + static_cast<std::size_t>(r) * stride; }
  const float* row(std::uint32_t r) const { return weight.data() + static_cast<std::size_t>(r) * stride; }
  float* grad_row(std::uint32_t r) { return grad.data() + static_cast<std::size_t>(r) * stride; }
  const bf16* row_bf16(std::uint32_t r) const { return weight_bf16.data() + static_cast<std::size_t>(r) * stride; }
  bool has_bf16() const { return weight_bf16.size() != 0; }
  // Whether `grad` is allocated; ensure_gradients allocates it (zeroed) if not. Called by one
  // thread before any path that accumulates into it, never inside a parallel region.
  bool has_gradients() const { return grad.size() != 0 || weight.size() == 0; }
  void ensure_gradients() {
    if (!has_gradients()) grad.resize(weight.size());
  }

  // Keep a BF16 copy of the weights, refreshed by every optimizer step (and by sync_bf16 after the
  // fp32 weights were written directly, e.g. by loading a model).
  void enable_bf16(int threads);
  void sync_bf16(int threads);

  // True for the first caller that touches `r` since the last update.
  bool claim(std::uint32_t r) { return __atomic_exchange_n(&touched[r], std::uint8_t{1}, __ATOMIC_RELAXED) == 0; }

  // Optimizer step (with the rows' bias entries) over the rows in `lists`, or over every row.
  // Returns how many updated rows now hold a NaN or inf.
  std::int64_t update(const std::vector<const std::vector<std::uint32_t>*>& lists, const OptimizerConfig& opt,
                      float lr, std::int64_t step, float grad_scale, int threads);
  std::int64_t update_all(const OptimizerConfig& opt, float lr, std::int64_t step, float grad_scale, int threads);
  // One optimizer step of row r (and its bias entry) from the gradient sums `grad` (cols floats)
  // and `bias_grad`, both zeroed afterwards, wherever they are held; the row's BF16 copy follows.
  // Returns whether the row now holds a NaN or inf. update() steps each listed row so, from its
  // own accumulators; a batch-shared output layer steps its rows from the batch's gathered ones.
  bool step_row(const OptimizerStep& s, const Kernels& k, std::uint32_t r, float* grad, float* bias_grad);
  void clear_gradients();
  std::size_t memory_bytes() const;

  std::uint32_t rows, cols;
  bool row_bias;
  std::size_t stride;
  AlignedArray<float> weight, grad;
  AlignedArray<bf16> weight_bf16;  // empty unless enable_bf16
  AlignedArray<float> bias, bias_grad;
  // The optimizer's arrays beside weight and bias, one per state_names(kind) entry.
  OptimizerKind kind;
  std::vector<AlignedArray<float>> state, bias_state;
  AlignedArray<std::uint8_t> touched;
};

}  // namespace slide
