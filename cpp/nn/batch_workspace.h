// Buffers for training a batch's output layer as matrix products (train/shared_batch.cpp), kept by
// the network between batches so a step allocates nothing once sizes settle. Row-major matrices
// with 64-byte-aligned rows; B = samples with labels, K = top hidden width, C = output chunk.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/aligned_array.h"
#include "nn/output_loss.h"
#include "nn/shared_active_set.h"

namespace slide {

// Leading dimension of the chunk buffers. A multiple of 4 KB would put a whole column of a
// transpose into one L1 set (the full 8,192-wide chunk of a dense layer did exactly that).
inline std::size_t chunk_stride(std::size_t chunk) {
  const std::size_t ld = padded_stride(chunk);
  return ld % 1024 == 0 ? ld + 16 : ld;
}

struct BatchWorkspace {
  std::vector<std::int64_t> rows;       // the batch's rows that have labels, in order
  std::vector<float> hidden;            // B x ldh: top hidden activations
  std::vector<float> hidden_delta;      // B x ldh: dL/d hidden
  std::vector<std::uint32_t> buckets;   // B x L: each sample's bucket in every table
  std::vector<std::uint32_t> labels;    // every label of the batch, repeats included
  std::vector<std::int64_t> label_ptr;  // B + 1: sample b's labels are labels[label_ptr[b], label_ptr[b + 1])
  // Under MPI: the batch's samples are every rank's, in rank order (B of them); this rank's start
  // at `first` and number `held`, and each rank's count is in `rank_samples`.
  std::size_t first = 0, held = 0;
  std::vector<std::size_t> rank_samples;
  std::vector<std::uint32_t> packed;    // this rank's samples for the others
  std::vector<std::uint8_t> gathered;   // every rank's
  std::vector<std::size_t> gathered_bytes;
  std::vector<float> held_delta;        // held x ldh: dL/d hidden of this rank's samples
  std::unique_ptr<SharedActiveSet> active;
  std::vector<float> weights_t;         // K x ldc: the chunk's weight rows, transposed
  std::vector<float> weights;           // C x ldh: the chunk's weight rows (gathered or widened from BF16)
  std::vector<float> bias;              // C
  std::vector<float> bias_grad;         // C: the chunk's bias gradients, summed over the batch
  std::vector<float> logits;            // B x ldc: logits, then dL/dlogits
  std::vector<float> logits_t;          // C x B: dL/dlogits transposed
  std::vector<float> weight_grad;       // C x ldh (sampled layers)
  std::vector<float> row_max, row_sum, loss;  // B: softmax statistics and per-sample loss
  std::vector<float> local_max, row_scale;    // B: this shard's max; exp(z - local max) to dL/dz
  std::vector<float> log_denominator;         // B: a non-label's dL/dz is exp(z - this)
  // OutputLoss::kDecoupled, per label of the batch (as `labels`): its logit, then exp(logit - row max);
  // and per sample the terms its gradient takes from them.
  std::vector<float> label_logit;
  std::vector<double> label_exp;
  std::vector<DecoupledTerms> decoupled;
  std::vector<float> scratch;           // threads x ldc: exponentials that are only summed
  // bf16_matmul: the three products' BF16 operands (K2 = K rounded up to even, B2 likewise; a
  // k-pair is two BF16 values in one word, as simd/kernels.h's gemm_bf16 reads them).
  std::vector<std::uint16_t> hidden_bf16;    // B x ldh: top hidden activations
  std::vector<std::uint16_t> hidden_pairs;   // B2/2 x 2 ldh: the same, samples in pairs
  std::vector<std::uint16_t> weights_bf16;   // C x ldh: the chunk's weight rows
  std::vector<std::uint32_t> weight_words_t; // K2/2 x ldc words: the chunk's rows transposed, hidden units in pairs
  std::vector<std::uint16_t> weight_pairs;   // C2/2 x 2 ldh: the chunk's rows, outputs in pairs
  std::vector<std::uint16_t> logits_bf16;    // B x ldc: dL/dlogits
  std::vector<std::uint16_t> logits_t_bf16;  // C x B2: dL/dlogits transposed
  // A sampled output layer trained from outside (train/external_output.cpp) keeps a batch's row
  // gradients compact from its forward to its optimizer step: summing them into the layer's
  // full-size accumulators and reading them back there moved each active row's gradient through
  // memory twice more. `compact_rows`: how many rows of weight_grad and bias_grad hold the whole
  // batch's gradient after output_batch_gradients (0: it went to the accumulators).
  std::size_t compact_rows = 0;
  std::vector<std::uint32_t> staged_ids;  // S: the output rows of the staged batch
  std::vector<float> staged_grad;         // S x ldh: their weight gradients, summed over the batch
  std::vector<float> staged_bias_grad;    // S: their bias gradients
};

}  // namespace slide
