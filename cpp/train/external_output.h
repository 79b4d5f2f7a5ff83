// The output layer trained under another framework's encoder (slide.torch.ExtremeOutput): the
// batch's top hidden activations come from outside, dL/dhidden goes back out, and the output
// layer's gradients stay in the network for its next apply_updates. The network's own input and
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
BatchStats external_output_gradients(Network& net, const float* hidden, std::size_t rows, const CsrIds& y,
                                     float* hidden_delta);

}  // namespace slide
