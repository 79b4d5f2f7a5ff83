// The batch loop: the samples of a batch are spread over OpenMP threads (HOGWILD: shared weights,
// no locks, per-thread state), then one optimizer step and the table schedule run. No exception
// escapes the parallel region; the first one is rethrown after the threads join.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"

namespace slide {

struct BatchStats {
  double loss = 0.0;          // summed over the samples that have labels
  std::int64_t samples = 0;   // samples with labels
  std::int64_t active = 0;    // output neurons computed, summed over samples
  std::int64_t retrieved = 0; // LSH candidates of the output layer, summed over samples
  std::int64_t nonfinite_rows = 0;  // parameter rows holding NaN/inf after this batch's update
};

// `apply` = false accumulates gradients without an optimizer step (used by gradient tests).
BatchStats train_batch(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                       std::int64_t count, float lr, bool apply);

}  // namespace slide
