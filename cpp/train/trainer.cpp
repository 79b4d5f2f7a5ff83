#include "train/trainer.h"

#include <omp.h>

#include <exception>

namespace slide {

BatchStats train_batch(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                       std::int64_t count, float lr, bool apply) {
  const int T = net.threads();
  for (int t = 0; t < T; ++t) net.state(t).reset_stats();
  net.prepare_batch(y, rows, count);
  std::exception_ptr error;
#pragma omp parallel num_threads(T)
  {
    ThreadState& ts = net.state(omp_get_thread_num());
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t i = 0; i < count; ++i) {
      try {
        ts.loss += net.train_sample(ts, sample_at(x, &y, rows[i]));
      } catch (...) {
#pragma omp critical(slide_train_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  BatchStats stats;
  for (int t = 0; t < T; ++t) {
    ThreadState& ts = net.state(t);
    stats.loss += ts.loss;
    stats.samples += ts.samples;
    stats.active += ts.active;
    stats.retrieved += ts.layers.back().retrieved;
  }
  if (apply) {
    stats.nonfinite_rows = net.apply_updates(lr, count);
    net.maintain_tables(count);
  }
  return stats;
}

}  // namespace slide
