// Top-k prediction: exact (every output neuron, blocked so each weight row is read once per block
// of samples) or LSH-sparse (only the neurons the tables retrieve, as in training).
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"
#include "train/quantized_scan.h"

namespace slide {

// How the exact (dense) top-k is found: the fp32 GEMM over every output, or the int8 scan with
// fp32 rescoring (train/quantized_scan.h), which returns the same rows for less; kAuto takes the
// int8 scan where it pays (a wide layer, enough samples, no normaliser asked for).
enum class ExactScan { kAuto, kFp32, kInt8 };

// With `log_normalizer` (dense only), also each row's log-sum-exp over every output's score.
// With `cache`, the int8 scan quantizes the weights only when they changed since its last use.
void predict_top_k(Network& net, const CsrFloat& x, int k, bool dense, std::int32_t* ids, float* scores,
                   float* log_normalizer = nullptr, ExactScan scan = ExactScan::kAuto,
                   QuantizedCache* cache = nullptr);

// predict_top_k's exact scan for rows x K top hidden activations given as they are (row-major),
// computed by another framework's encoder (slide.torch).
void top_k_of_hidden(Network& net, const float* hidden, std::int64_t rows, int k, std::int32_t* ids, float* scores,
                     float* log_normalizer = nullptr, ExactScan scan = ExactScan::kAuto,
                     QuantizedCache* cache = nullptr);

// The top hidden layer's activations of every row of x: out holds rows x width floats.
void hidden_representation(Network& net, const CsrFloat& x, float* out);

// Mean softmax cross-entropy over the rows that have labels (exact: every output neuron).
double mean_loss(Network& net, const CsrFloat& x, const CsrIds& y);

}  // namespace slide
