#include "train/trainer.h"

#include <optional>

#include "common/check.h"
#include "distributed/replica_sync.h"
#include "train/parallel_rows.h"
#include "train/shared_batch.h"
#include "train/step_team.h"

namespace slide {

namespace {

// SLIDE's way: every sample forward and backward on its own active set, HOGWILD.
BatchStats per_sample_gradients(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                                std::int64_t count) {
  const int T = net.threads();  // every state's stats: reset, then summed
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
  Collective* comm = net.collective();
  SLIDE_REQUIRE(!comm || net.trains_shared_batches(),
                "a network sharded over MPI ranks trains batch-shared (mode 'batch' or 'dense')");
  const StepTeam team(net, step_work(net, x, rows, count));
  // In one process a batch-shared sampled output layer steps each active row as soon as its
  // gradient is gathered: writing it to the layer's accumulators and reading it back for the step
  // moved each active weight's gradient through memory twice more (debian-deps' network, 4
  // epochs: 7.3-7.5 s of training, 7.0-7.1 s so). Under MPI the step needs every rank's batch
  // size, known only after the gradients.
  std::optional<OptimizerStep> output_step;
  if (apply && !comm && count > 0 && net.trains_shared_batches() && net.layers.back().sampled())
    output_step.emplace(net.config().optimizer, lr, net.step + 1, 1.0f / static_cast<float>(count));
  BatchStats stats = net.trains_shared_batches()
                         ? shared_batch_gradients(net, x, y, rows, count, output_step ? &*output_step : nullptr)
                         : per_sample_gradients(net, x, y, rows, count);
  std::int64_t samples = count;
  if (comm) {  // the batch is every rank's: its size, loss and active outputs are summed
    double totals[3] = {static_cast<double>(count), stats.loss, static_cast<double>(stats.active)};
    comm->sum(totals, 3);
    samples = static_cast<std::int64_t>(totals[0]);
    stats.loss = totals[1];
    stats.active = static_cast<std::int64_t>(totals[2]);
    const ExchangeStats e = sum_replicated_gradients(net, *comm, net.config().sparse_exchange);
    stats.exchanged_rows = e.rows;
    stats.exchanged_union = e.union_rows;
    stats.exchanged_by_allreduce = e.allreduce;
  }
  if (apply) {
    stats.nonfinite_rows += net.apply_updates(lr, samples);
    if (comm) {  // every rank must see a divergence, or the others would wait for it forever
      double nonfinite = static_cast<double>(stats.nonfinite_rows);
      comm->sum(&nonfinite, 1);
      stats.nonfinite_rows = static_cast<std::int64_t>(nonfinite);
    }
    net.maintain_tables(samples);
  }
  return stats;
}

}  // namespace slide
