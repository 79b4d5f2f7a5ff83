// The shape and training settings of a network: a sparse input layer, then fully connected layers
// (the last is the softmax output), each dense or LSH-sampled.
#pragma once
#include <cstdint>
#include <vector>

#include "distributed/collective.h"
#include "distributed/sparse_exchange.h"
#include "lsh/lsh_config.h"
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
  // Under MPI: the rows of the output layer this rank holds (layers.back().size of them). Labels
  // stay global ids; the rows initialise as the same rows of the whole layer would.
  OutputShard output_shard;
  // Under MPI: how the embedding's sparse gradient is summed over the ranks (distributed/replica_sync.h).
  SparseExchange sparse_exchange = SparseExchange::kAuto;

  // Labels the network predicts: the whole output layer, of which this process may hold a part.
  std::uint32_t outputs() const { return output_shard.total ? output_shard.total : layers.back().size; }
};

void validate(const NetworkConfig& c);  // throws std::invalid_argument naming the field

}  // namespace slide
