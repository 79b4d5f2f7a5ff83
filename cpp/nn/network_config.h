// The shape and training settings of a network: a sparse input layer, then fully connected layers
// (the last is the softmax output), each dense or LSH-sampled.
#pragma once
#include <cstdint>
#include <vector>

#include "distributed/collective.h"
#include "distributed/sparse_exchange.h"
#include "lsh/lsh_config.h"
#include "nn/output_loss.h"
#include "nn/parameters.h"

namespace slide {

struct LayerConfig {
  std::uint32_t size = 0;
  bool sampled = false;
  LshConfig lsh;
};

struct NetworkConfig {
  std::uint32_t input_dim = 0;
  std::vector<LayerConfig> layers;  // hidden layers first; the last one is the output layer
  OptimizerConfig optimizer;
  int threads = 1;
  std::uint64_t seed = 0;
  // precision="bf16": the forward and backward passes read BF16 copies of the weight rows, which
  // the optimizer refreshes from the fp32 master weights it updates.
  bool bf16_weights = false;
  // matmul="bf16": the batch-shared output layer's three matrix products round their inputs to
  // BF16 and sum in fp32, where the CPU multiplies BF16 in hardware (simd/kernels.h,
  // bf16_matmul_native); elsewhere they stay fp32.
  bool bf16_matmul = false;
  // Each sample's feature values are scaled to unit L2 norm before the embedding (training and
  // inference alike), as tree and linear XC methods do with tf-idf rows.
  bool l2_normalize_input = false;
  // Training only: each nonzero feature is dropped with this probability (the rest are scaled by
  // 1 / (1 - p), after normalisation, so their mean is unchanged). Regularises the sparse embedding.
  float input_dropout = 0.0f;
  // The loss over each sample's active outputs (nn/output_loss.h).
  OutputLoss output_loss = OutputLoss::kSoftmax;
  // Under MPI: the rows of the output layer this rank holds (layers.back().size of them). Labels
  // stay global ids; the rows initialise as the same rows of the whole layer would.
  OutputShard output_shard;
  // Under MPI: how the embedding's sparse gradient is summed over the ranks (distributed/replica_sync.h).
  SparseExchange sparse_exchange = SparseExchange::kAuto;

  // Labels the network predicts: the whole output layer, of which this process may hold a part.
  std::uint32_t outputs() const { return output_shard.total ? output_shard.total : layers.back().size; }
};

// Trains the output layer per batch as matrix products (train/shared_batch.cpp) rather than per
// sample: a dense output layer, or a sampled one with lsh.batch_active > 0, over no sampled hidden
// layer (per-sample active sets below keep per-sample training).
bool trains_shared_batches(const NetworkConfig& c);
// Whether the output layer's gradient accumulators wait for their first use (Parameters::
// ensure_gradients): in one process (no output shard) a batch-shared sampled output layer steps
// each active row from the batch's gathered gradient (train/trainer.cpp), so only gradients asked
// for without a step, or an outside trainer's batches summed before a step, ever fill them. Under
// MPI every batch does (the step waits for every rank's batch size): they are allocated up front.
bool defers_output_gradients(const NetworkConfig& c);

void validate(const NetworkConfig& c);  // throws std::invalid_argument naming the field

}  // namespace slide
