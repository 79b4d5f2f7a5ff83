// Rows [0, count) in chunks over the network's threads (those of the training step under way, if
// one is: Network::step_threads), each with its own ThreadState
// (common/parallel.h: split by the real team, exceptions rethrown after the join).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "common/parallel.h"
#include "nn/network.h"

namespace slide {

// body(ThreadState&, begin, end) for consecutive chunks of `chunk` rows, handed out dynamically.
template <class Body>
void parallel_rows(Network& net, std::int64_t count, std::int64_t chunk, Body body) {
  parallel_for(
      net.step_threads(), (count + chunk - 1) / chunk, 1, [&net] { return &net.state(omp_get_thread_num()); },
      [&](ThreadState* ts, std::int64_t c) { body(*ts, c * chunk, std::min(count, (c + 1) * chunk)); });
}

}  // namespace slide
