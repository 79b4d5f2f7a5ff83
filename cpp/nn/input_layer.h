// The sparse input layer: an embedding bag. Row f holds feature f's weights to every hidden unit,
// so a sample costs one contiguous row per nonzero feature, forward and backward.
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"
#include "nn/activations.h"
#include "nn/parameters.h"

namespace slide {

class InputLayer {
 public:
  InputLayer(std::uint32_t features, std::uint32_t hidden, OptimizerKind kind);

  void forward(const SampleView& s, Activations& out) const;
  // `delta` is dL/d(pre-activation) of the hidden units.
  void backward(const SampleView& s, const float* delta, std::vector<std::uint32_t>& touched);

  Parameters table;  // features x hidden
  Parameters bias;   // 1 x hidden
};

}  // namespace slide
