// Top-k prediction: exact (every output neuron, blocked so each weight row is read once per block
// of samples) or LSH-sparse (only the neurons the tables retrieve, as in training).
#pragma once
#include <cstdint>
#include <string>

#include "common/sparse_view.h"
#include "nn/network.h"
#include "train/quantized_scan.h"

namespace slide {

// How the dense top-k is found: the fp32 GEMM over every output, or the int8 scan with fp32
// rescoring (train/quantized_scan.h), which returns the same rows for less; kAuto takes the int8
// scan where it pays (a wide layer, enough samples, no normaliser asked for). kBf16 is the one that
// is not exact: the GEMM from weights and activations rounded to BF16, for rankings that training
// makes with the products it trained with (matmul="bf16": the re-ranker's training lists). Where
// BF16 products are not native it is kAuto, as matmul="bf16" changes nothing there.
enum class Scan { kAuto, kFp32, kInt8, kBf16 };

// The scan a Python caller names ("auto", "fp32", "int8", "bf16"); a normaliser needs an fp32 sum
// over every output, which only "auto" and "fp32" give. Throws std::invalid_argument otherwise.
Scan parse_scan(const std::string& name, bool normalizer);

// With `log_normalizer` (dense only), also each row's log-sum-exp over every output's score.
// With `cache`, the int8 scan quantizes the weights only when they changed since its last use.
void predict_top_k(Network& net, const CsrFloat& x, int k, bool dense, std::int32_t* ids, float* scores,
                   float* log_normalizer = nullptr, Scan scan = Scan::kAuto,
                   QuantizedCache* cache = nullptr);

// predict_top_k's exact scan for rows x K top hidden activations given as they are (row-major),
// computed by another framework's encoder (slide.torch).
void top_k_of_hidden(Network& net, const float* hidden, std::int64_t rows, int k, std::int32_t* ids, float* scores,
                     float* log_normalizer = nullptr, Scan scan = Scan::kAuto,
                     QuantizedCache* cache = nullptr);

// The top hidden layer's activations of every row of x: out holds rows x width floats.
void hidden_representation(Network& net, const CsrFloat& x, float* out);

// Mean softmax cross-entropy over the rows that have labels (exact: every output neuron).
double mean_loss(Network& net, const CsrFloat& x, const CsrIds& y);

}  // namespace slide
