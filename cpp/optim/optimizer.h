// The optimizer as one component: which one, the state it keeps per weight, and one row's step.
// Parameters owns the state arrays; everything optimizer-specific is here and in the kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simd/kernels.h"

namespace slide {

enum class OptimizerKind { kAdam, kSgd, kAdagrad };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float beta1 = 0.9f;   // Adam
  float beta2 = 0.999f; // Adam
  float eps = 1e-8f;    // Adam, Adagrad
};

// The arrays the optimizer keeps beside each weight array, by the names model files store them
// under: Adam its two moments, Adagrad its sum of squared gradients, SGD none.
const std::vector<std::string>& state_names(OptimizerKind kind);

// One optimizer step's constants (the learning rate, Adam's bias correction), computed once per
// update and then applied row by row from many threads.
class OptimizerStep {
 public:
  OptimizerStep(const OptimizerConfig& c, float lr, std::int64_t step, float grad_scale);

  // Updates w[0..n) from the gradient sums g (zeroed afterwards) and the row's state arrays, one
  // pointer per state_names() entry.
  void apply(const Kernels& k, float* w, float* const* state, float* g, std::size_t n) const;

  OptimizerKind kind() const { return kind_; }

 private:
  OptimizerKind kind_;
  AdamStep adam_;
  float lr_, eps_, grad_scale_;
};

}  // namespace slide
