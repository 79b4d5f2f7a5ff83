#include "nn/output_loss.h"

#include <algorithm>

namespace slide {

DecoupledTerms decoupled_terms(const double* label_exp, std::size_t labels, double total) {
  DecoupledTerms t;
  if (labels == 0) return t;
  double own = 0.0;
  for (std::size_t i = 0; i < labels; ++i) own += label_exp[i];
  // The subtraction loses the negatives' few bits where the labels hold nearly all the mass; a
  // negative share below zero is rounding, and then each label's probability is 1.
  t.negatives = std::max(total - own, 0.0);
  for (std::size_t i = 0; i < labels; ++i) {
    const double denominator = label_exp[i] + t.negatives;
    if (denominator > 0.0) t.scale += 1.0 / denominator;
  }
  t.scale /= static_cast<double>(labels);
  return t;
}

}  // namespace slide
