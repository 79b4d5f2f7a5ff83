// Under MPI every rank holds the same embedding and hidden layers and trains them on its own
// samples; before each optimizer step their gradients are summed over the ranks, so every replica
// takes the same step and stays bit-identical. The embedding's gradient is sparse (the rows of the
// batch's features), so it travels as (row id, values), one of two ways:
//   allgather: every rank sends its rows to every other; a rank receives (N-1) x rows x width;
//   allreduce: the ids first, then one sum over the union of the rows, 2 (N-1)/N x union x width;
// the second wins when the ranks' rows overlap (common features), the first when they do not.
#pragma once
#include <cstdint>

#include "distributed/collective.h"
#include "distributed/sparse_exchange.h"
#include "nn/network.h"

namespace slide {

struct ExchangeStats {
  std::int64_t rows = 0;        // embedding rows with gradient, summed over ranks
  std::int64_t union_rows = 0;  // distinct ones
  bool allreduce = false;       // the way taken
};

// The rule kAuto follows, the same on every rank: the union's sum costs 2 (N-1) x union x width in
// all, the allgather (N-1) x rows x width.
inline bool allreduce_pays(std::int64_t rows, std::int64_t union_rows) { return 2 * union_rows < rows; }

ExchangeStats sum_replicated_gradients(Network& net, Collective& comm, SparseExchange how);

}  // namespace slide
