// Top-k prediction: exact (every output neuron, blocked so each weight row is read once per block
// of samples) or LSH-sparse (only the neurons the tables retrieve, as in training).
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"

namespace slide {

// With `log_normalizer` (dense only), also each row's log-sum-exp over every output's score.
void predict_top_k(Network& net, const CsrFloat& x, int k, bool dense, std::int32_t* ids, float* scores,
                   float* log_normalizer = nullptr);

// The top hidden layer's activations of every row of x: out holds rows x width floats.
void hidden_representation(Network& net, const CsrFloat& x, float* out);

// Mean softmax cross-entropy over the rows that have labels (exact: every output neuron).
double mean_loss(Network& net, const CsrFloat& x, const CsrIds& y);

}  // namespace slide
