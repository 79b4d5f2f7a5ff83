// Rows [0, count) in chunks over the network's threads, each with its own ThreadState. No exception
// escapes the parallel region; the first one is rethrown after the threads join.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>

#include "nn/network.h"

namespace slide {

// body(ThreadState&, begin, end) for consecutive chunks of `chunk` rows, handed out dynamically.
template <class Body>
void parallel_rows(Network& net, std::int64_t count, std::int64_t chunk, Body body) {
  std::exception_ptr error;
#pragma omp parallel num_threads(net.threads())
  {
    ThreadState& ts = net.state(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < (count + chunk - 1) / chunk; ++c) {
      try {
        body(ts, c * chunk, std::min(count, (c + 1) * chunk));
      } catch (...) {
#pragma omp critical(slide_parallel_rows_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace slide
