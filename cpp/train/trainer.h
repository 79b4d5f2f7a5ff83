// The batch loop: gradients for the batch, then one optimizer step and the table schedule. The
// gradients come per sample, spread over OpenMP threads (HOGWILD: shared weights, no locks,
// per-thread state), or for a batch-shared output layer as matrix products (shared_batch.h).
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
  // Under MPI (distributed/replica_sync.h): embedding rows with gradient over all ranks, distinct
  // ones, and whether they were summed by allreduce (else allgather).
  std::int64_t exchanged_rows = 0, exchanged_union = 0;
  bool exchanged_by_allreduce = false;
};

// `apply` = false accumulates gradients without an optimizer step (used by gradient tests).
BatchStats train_batch(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                       std::int64_t count, float lr, bool apply);

}  // namespace slide
