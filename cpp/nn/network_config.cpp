#include "nn/network_config.h"

#include "common/check.h"

namespace slide {

void validate(const NetworkConfig& c) {
  SLIDE_REQUIRE(c.input_dim >= 1, "input_dim must be >= 1, got " << c.input_dim);
  SLIDE_REQUIRE(c.layers.size() >= 2, "a network needs at least one hidden layer and an output layer");
  SLIDE_REQUIRE(!c.layers.front().sampled, "the first hidden layer (the input embedding) cannot be sampled");
  SLIDE_REQUIRE(c.threads >= 1 && c.threads <= 1024, "threads must be in [1, 1024], got " << c.threads);
  const OptimizerConfig& o = c.optimizer;
  SLIDE_REQUIRE(o.beta1 >= 0.0f && o.beta1 < 1.0f, "beta1 must be in [0, 1), got " << o.beta1);
  SLIDE_REQUIRE(o.beta2 >= 0.0f && o.beta2 < 1.0f, "beta2 must be in [0, 1), got " << o.beta2);
  SLIDE_REQUIRE(o.eps > 0.0f, "eps must be > 0, got " << o.eps);
  std::uint32_t prev = 0;
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    const LayerConfig& l = c.layers[i];
    SLIDE_REQUIRE(l.size >= 1, "layer " << i << " must have at least one neuron");
    if (l.sampled) validate(l.lsh, static_cast<int>(prev), l.size);
    prev = l.size;
  }
}

}  // namespace slide
