#include "train/trainer.h"

#include "train/parallel_rows.h"
#include "train/shared_batch.h"

namespace slide {

namespace {

// SLIDE's way: every sample forward and backward on its own active set, HOGWILD.
BatchStats per_sample_gradients(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                                std::int64_t count) {
  const int T = net.threads();
  for (int t = 0; t < T; ++t) net.state(t).reset_stats();
  net.prepare_batch(y, rows, count);
  parallel_rows(net, count, 4, [&](ThreadState& ts, std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) ts.loss += net.train_sample(ts, sample_at(x, &y, rows[i], i));
  });
  BatchStats stats;
  for (int t = 0; t < T; ++t) {
    ThreadState& ts = net.state(t);
    stats.loss += ts.loss;
    stats.samples += ts.samples;
    stats.active += ts.active;
    stats.retrieved += ts.layers.back().retrieved;
  }
  return stats;
}

}  // namespace

BatchStats train_batch(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                       std::int64_t count, float lr, bool apply) {
  BatchStats stats = net.trains_shared_batches() ? shared_batch_gradients(net, x, y, rows, count)
                                                 : per_sample_gradients(net, x, y, rows, count);
  if (apply) {
    stats.nonfinite_rows = net.apply_updates(lr, count);
    net.maintain_tables(count);
  }
  return stats;
}

}  // namespace slide
