// The output layer of a batch as matrix products: every sample is scored against one shared set of
// output neurons, the whole layer when it is dense, or the batch's labels plus its samples' most
// frequent LSH candidates (lsh.batch_active) when it is sampled: SLIDE's hard negatives at GEMM
// speed. Output sets wider than a chunk take an online-softmax pass first and recompute their
// logits chunk by chunk, so memory stays B x chunk whatever the layer width.
//
// This is the seam between the output layer and whatever computes its input: the network's own
// layers (train/shared_batch.cpp) or another framework's encoder (train/external_output.cpp).
#pragma once
#include <cstddef>

#include "nn/network.h"
#include "train/trainer.h"

namespace slide {

// Reads from net.batch_workspace() the batch's `samples` top hidden activations (`hidden`, one
// row of padded_stride(K) floats each) and their labels (`labels`, `label_ptr`; every sample has
// at least one). Accumulates the output layer's gradients in the network, and leaves dL/dhidden of
// this rank's samples in `hidden_delta` (`held_delta` under MPI, where they are rows `first` ..
// `first + held` of the batch every rank shares) and each sample's loss in `loss`.
// With `step`, a sampled layer's rows take their optimizer step as soon as their gradient is
// gathered (Parameters::step_row), never written to the layer's accumulators, and stats count the
// rows left non-finite; the caller then steps the rest of the network (apply_updates) without them.
// With `keep_compact` (and no `step`), a sampled layer whose active set fits one chunk leaves the
// batch's row gradients in the workspace (weight_grad, bias_grad; `compact_rows` says how many,
// in the order of the active set's ids) instead of the layer's accumulators.
BatchStats output_batch_gradients(Network& net, std::size_t samples, const OptimizerStep* step = nullptr,
                                  bool keep_compact = false);

}  // namespace slide
