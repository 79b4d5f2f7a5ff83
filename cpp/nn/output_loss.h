// The output layer's loss over a sample's active outputs (NetworkConfig::output_loss), one definition for
// the per-sample path (nn/network.cpp) and the batch-shared one (train/output_batch.cpp).
//
// kSoftmax: one softmax over the active outputs, the target spread 1/|labels| over the labels.
// kDecoupled: each label against the negatives alone (the "decoupled softmax" of Gupta et al.,
// "Dual-Encoders for Extreme Multi-Label Classification", ICLR 2024), averaged over the labels:
//   L = (1/p) sum_l -log(e_l / (e_l + N)),  e_n = exp(z_n - M),  N = sum over the negatives of e_n.
// A sample's other labels never sit in a label's denominator, so a point with many labels does not
// split one unit of probability between them: under the spread softmax a point with 8 labels pushes
// each of them only to 1/8. Gradients: (1/p)(q_l - 1) for label l, q_l = e_l / (e_l + N), and
// e_n x scale for a negative, scale = (1/p) sum_l 1 / (e_l + N).
#pragma once
#include <cstddef>

namespace slide {

enum class OutputLoss { kSoftmax, kDecoupled };

struct DecoupledTerms {
  double negatives = 0.0;  // N: the negatives' share of the normaliser
  double scale = 0.0;      // dL/dz_n = e_n x scale for a negative n
  // A label's probability against the negatives (1 where there are none and it is absent too).
  double probability(double label_exp) const {
    const double denominator = label_exp + negatives;
    return denominator > 0.0 ? label_exp / denominator : 1.0;
  }
};

// From the sum of e_n over every active output (`total`) and the labels' own e_l (`labels` of them,
// each counted once in `total`; 0 for a label absent from the active set).
DecoupledTerms decoupled_terms(const double* label_exp, std::size_t labels, double total);

}  // namespace slide
