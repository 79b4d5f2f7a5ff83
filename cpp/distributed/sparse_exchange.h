// How the embedding's sparse gradient is summed over MPI ranks (distributed/replica_sync.h); the
// names are slide.settings' `sparse_exchange` choices.
#pragma once

namespace slide {

enum class SparseExchange { kAuto, kAllgather, kAllreduce };

}  // namespace slide
