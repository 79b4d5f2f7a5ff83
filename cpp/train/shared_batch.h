// Gradients for a batch whose output layer trains as matrix products: every sample is scored
// against one shared set of output neurons, the whole layer when it is dense, or the batch's labels
// plus its samples' most frequent LSH candidates (lsh.batch_active) when it is sampled: SLIDE's hard
// negatives at GEMM speed. The layers below the output still run per sample, HOGWILD. Output sets
// wider than a chunk take an online-softmax pass first and recompute their logits chunk by chunk,
// so memory stays B x chunk whatever the layer width.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"
#include "train/trainer.h"

namespace slide {

BatchStats shared_batch_gradients(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                                  std::int64_t count);

}  // namespace slide
