#include "nn/network_config.h"

#include "common/check.h"

namespace slide {

bool trains_shared_batches(const NetworkConfig& c) {
  for (std::size_t i = 1; i + 1 < c.layers.size(); ++i)
    if (c.layers[i].sampled) return false;
  const LayerConfig& out = c.layers.back();
  return !out.sampled || out.lsh.batch_active > 0;
}

bool defers_output_gradients(const NetworkConfig& c) {
  return c.output_shard.total == 0 && c.layers.size() > 1 && c.layers.back().sampled && trains_shared_batches(c);
}

void validate(const NetworkConfig& c) {
  SLIDE_REQUIRE(c.input_dim >= 1, "input_dim must be >= 1, got " << c.input_dim);
  SLIDE_REQUIRE(c.layers.size() >= 2, "a network needs at least one hidden layer and an output layer");
  SLIDE_REQUIRE(!c.layers.front().sampled, "the first hidden layer (the input embedding) cannot be sampled");
  SLIDE_REQUIRE(c.threads >= 1 && c.threads <= 1024, "threads must be in [1, 1024], got " << c.threads);
  SLIDE_REQUIRE(c.input_dropout >= 0.0f && c.input_dropout < 1.0f,
                "input_dropout must be in [0, 1), got " << c.input_dropout);
  const OptimizerConfig& o = c.optimizer;
  SLIDE_REQUIRE(o.beta1 >= 0.0f && o.beta1 < 1.0f, "beta1 must be in [0, 1), got " << o.beta1);
  SLIDE_REQUIRE(o.beta2 >= 0.0f && o.beta2 < 1.0f, "beta2 must be in [0, 1), got " << o.beta2);
  SLIDE_REQUIRE(o.eps > 0.0f, "eps must be > 0, got " << o.eps);
  bool sampled_hidden = false;
  for (std::size_t i = 0; i + 1 < c.layers.size(); ++i) sampled_hidden |= c.layers[i].sampled;
  std::uint32_t prev = 0;
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    const LayerConfig& l = c.layers[i];
    SLIDE_REQUIRE(l.size >= 1, "layer " << i << " must have at least one neuron");
    if (l.sampled) validate(l.lsh, static_cast<int>(prev), l.size);
    const bool output = i + 1 == c.layers.size();
    SLIDE_REQUIRE(!l.sampled || l.lsh.batch_active == 0 || output,
                  "layer " << i << ": lsh.batch_active (a batch-shared active set) is for the output layer only");
    SLIDE_REQUIRE(!(output && l.sampled && l.lsh.batch_active > 0 && sampled_hidden),
                  "lsh.batch_active needs dense hidden layers: a batch-shared output layer trains as one matrix "
                  "product over the batch's hidden activations");
    prev = l.size;
  }
  const OutputShard& shard = c.output_shard;
  SLIDE_REQUIRE(shard.total == 0 || std::uint64_t{shard.offset} + c.layers.back().size <= shard.total,
                "output_shard: rows [" << shard.offset << ", " << std::uint64_t{shard.offset} + c.layers.back().size
                                       << ") do not fit in an output layer of " << shard.total);
  SLIDE_REQUIRE(shard.total == 0 || !sampled_hidden,
                "a sharded output layer needs dense hidden layers (it trains batch-shared)");
}

}  // namespace slide
