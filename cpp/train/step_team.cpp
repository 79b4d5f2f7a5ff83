#include "train/step_team.h"

#include <algorithm>
#include <atomic>

#include "common/check.h"

namespace slide {

namespace {

std::atomic<std::int64_t> floor_in_use{kDefaultParallelWorkFloor};

// Rows of `layer` one sample's forward pass computes.
std::int64_t rows_computed(const FcLayer& layer) {
  const std::int64_t rows = layer.params.rows;
  if (!layer.sampled()) return rows;
  const LshConfig& c = layer.index()->config();
  std::int64_t retrievable = std::int64_t{c.l} * c.bucket_size;
  if (c.max_active > 0) retrievable = std::min<std::int64_t>(retrievable, c.max_active);
  return std::min(rows, std::max<std::int64_t>(retrievable, c.min_active));
}

}  // namespace

std::int64_t parallel_work_floor() { return floor_in_use.load(std::memory_order_relaxed); }

void set_parallel_work_floor(std::int64_t multiply_adds) {
  SLIDE_REQUIRE(multiply_adds >= 0, "the parallel work floor is a count of multiply-adds (>= 0), got " << multiply_adds);
  floor_in_use.store(multiply_adds, std::memory_order_relaxed);
}

std::int64_t step_work(const Network& net, const CsrFloat& x, const std::int64_t* rows, std::int64_t count) {
  std::int64_t features = 0;
  for (std::int64_t i = 0; i < count; ++i) features += x.indptr[rows[i] + 1] - x.indptr[rows[i]];
  std::int64_t per_sample = 0;
  for (const FcLayer& layer : net.layers) per_sample += rows_computed(layer) * layer.params.cols;
  return features * net.input.table.cols + count * per_sample;
}

StepTeam::StepTeam(Network& net, std::int64_t work) : net_(net) {
  net_.set_step_threads(work < parallel_work_floor() ? 1 : net_.threads());
}

StepTeam::~StepTeam() { net_.set_step_threads(0); }

}  // namespace slide
