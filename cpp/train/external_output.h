// The output layer trained under another framework's encoder (slide.torch.ExtremeOutput): the
// batch's top hidden activations come from outside, dL/dhidden goes back out, and the output
// layer's gradients wait in the network for external_output_step. The network's own input and
// hidden layers take no part.
#pragma once
#include <cstddef>
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"
#include "train/trainer.h"

namespace slide {

// `hidden`: rows x K floats, row-major (K = the output layer's input width); `y`: the rows' labels.
// Writes dL/dhidden of each row's softmax cross-entropy (unscaled; the rows' mean is the caller's
// choice) into `hidden_delta` (rows x K), zero for a row without labels. Not under MPI.
// With `compact`, a sampled layer's batch that is the only one waiting for the step keeps its row
// gradients compact (BatchWorkspace::staged_*) rather than in the layer's accumulators; a second
// batch before the step moves them there and joins them. Without it, every batch accumulates: the
// plain path, kept as the oracle the compact one is tested against.
BatchStats external_output_gradients(Network& net, const float* hidden, std::size_t rows, const CsrIds& y,
                                     float* hidden_delta, bool compact = true);

// The optimizer step over whatever the batches since the last step left (Network::apply_updates'
// contract: `samples` rows, the mean loss's gradient times `gradient_scale`); returns how many
// stepped rows hold NaN or inf.
std::int64_t external_output_step(Network& net, float lr, std::int64_t samples, float gradient_scale);

}  // namespace slide
