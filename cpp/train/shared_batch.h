// Gradients for a batch whose output layer trains as matrix products (train/output_batch.h): the
// layers below the output run per sample, HOGWILD, and hand the output layer the batch's top hidden
// activations; its dL/dhidden comes back down through them per sample.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"
#include "train/trainer.h"

namespace slide {

// `output_step`: as output_batch_gradients' `step`.
BatchStats shared_batch_gradients(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                                  std::int64_t count, const OptimizerStep* output_step = nullptr);

}  // namespace slide
