#include "optim/optimizer.h"

#include <cmath>

namespace slide {

const std::vector<std::string>& state_names(OptimizerKind kind) {
  static const std::vector<std::string> adam{"adam_m", "adam_v"}, adagrad{"adagrad_sum"}, sgd{};
  switch (kind) {
    case OptimizerKind::kAdam: return adam;
    case OptimizerKind::kAdagrad: return adagrad;
    case OptimizerKind::kSgd: break;
  }
  return sgd;
}

OptimizerStep::OptimizerStep(const OptimizerConfig& c, float lr, std::int64_t step, float grad_scale)
    : kind_(c.kind), adam_{}, lr_(lr), eps_(c.eps), grad_scale_(grad_scale) {
  if (kind_ == OptimizerKind::kAdam) {
    const double t = static_cast<double>(step);
    adam_.lr = static_cast<float>(lr * std::sqrt(1.0 - std::pow(c.beta2, t)) / (1.0 - std::pow(c.beta1, t)));
    adam_.beta1 = c.beta1;
    adam_.beta2 = c.beta2;
    adam_.eps = c.eps;
    adam_.grad_scale = grad_scale;
  }
}

void OptimizerStep::apply(const Kernels& k, float* w, float* const* state, float* g, std::size_t n) const {
  switch (kind_) {
    case OptimizerKind::kAdam: k.adam(w, state[0], state[1], g, n, adam_); return;
    case OptimizerKind::kAdagrad: k.adagrad(w, state[0], g, n, lr_, eps_, grad_scale_); return;
    case OptimizerKind::kSgd: k.sgd(w, g, n, lr_ * grad_scale_); return;
  }
}

}  // namespace slide
