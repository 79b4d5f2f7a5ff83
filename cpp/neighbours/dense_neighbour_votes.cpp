#include "neighbours/dense_neighbour_votes.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/parallel.h"
#include "neighbours/vote_rows.h"
#include "simd/kernels.h"
#include "train/top_k.h"

namespace slide {

namespace {

// A task's queries share each pass over the points, so the points are read once per task: 128
// queries of debian-deps' 12,295 read its 48,106 x 128 floats 97 times in all.
constexpr std::int64_t kQueriesPerTask = 128;
constexpr std::int64_t kPointsPerPass = 512;

struct Scratch {
  std::vector<float> queries_t;  // one column per query of the task
  std::vector<float> block;      // kPointsPerPass x the task's queries
  std::vector<float> bar;
  std::vector<std::uint32_t> hits;
  std::vector<TopK> best;
  std::vector<std::int32_t> ids;
  std::vector<float> scores;
  std::vector<std::pair<float, std::int32_t>> nearest;
  std::vector<std::pair<std::int32_t, float>> cast;
};

void vote_task(const float* queries, std::int64_t first, std::int64_t m, const float* points, std::int64_t count,
               std::int64_t width, const CsrIds& point_labels, int k, Scratch& s, VoteRows& out) {
  const Kernels& kern = kernels();
  const std::size_t w = static_cast<std::size_t>(width), cols = static_cast<std::size_t>(m);
  s.queries_t.resize(w * cols);
  for (std::size_t b = 0; b < cols; ++b)
    for (std::size_t q = 0; q < w; ++q) s.queries_t[q * cols + b] = queries[(first + b) * w + q];
  s.block.resize(static_cast<std::size_t>(kPointsPerPass) * cols);
  s.bar.assign(cols, 0.0f);  // only positive similarities vote
  s.hits.resize(cols);
  s.best.assign(cols, TopK(k));
  for (std::int64_t p0 = 0; p0 < count; p0 += kPointsPerPass) {
    const std::int64_t rows = std::min(kPointsPerPass, count - p0);
    kern.gemm(static_cast<std::size_t>(rows), cols, w, points + p0 * width, w, s.queries_t.data(), cols,
              s.block.data(), cols, false);
    for (std::int64_t r = 0; r < rows; ++r) {
      float* similarity = &s.block[static_cast<std::size_t>(r) * cols];
      const std::size_t reached = kern.add_bias_hits(similarity, cols, 0.0f, s.bar.data(), s.hits.data());
      for (std::size_t i = 0; i < reached; ++i) {
        const std::uint32_t b = s.hits[i];
        if (!(similarity[b] > 0.0f)) continue;  // zero, or NaN
        s.best[b].push(static_cast<std::int32_t>(p0 + r), similarity[b]);
        s.bar[b] = std::max(s.best[b].threshold(), 0.0f);
      }
    }
  }
  s.ids.resize(static_cast<std::size_t>(k));
  s.scores.resize(static_cast<std::size_t>(k));
  for (std::size_t b = 0; b < cols; ++b) {
    s.best[b].write(s.ids.data(), s.scores.data());  // closest first, ties to the lower point
    s.nearest.clear();
    for (int i = 0; i < k && s.ids[static_cast<std::size_t>(i)] >= 0; ++i)
      s.nearest.emplace_back(s.scores[static_cast<std::size_t>(i)], s.ids[static_cast<std::size_t>(i)]);
    cast_votes(s.nearest, point_labels, k, s.cast, out);
  }
}

}  // namespace

NeighbourVotes dense_neighbour_votes(const float* queries, std::int64_t n, const float* points, std::int64_t count,
                                     std::int64_t width, const CsrIds& point_labels, int k, int threads) {
  SLIDE_REQUIRE(k >= 1, "dense_neighbour_votes: k must be at least 1, got " << k);
  SLIDE_REQUIRE(width >= 1, "dense_neighbour_votes: the rows must have at least one value, got " << width);
  SLIDE_REQUIRE(count == point_labels.rows, "dense_neighbour_votes: " << count << " points but labels for "
                                                                      << point_labels.rows);
  const std::int64_t tasks = (n + kQueriesPerTask - 1) / kQueriesPerTask;
  std::vector<VoteRows> done(static_cast<std::size_t>(tasks));
  parallel_for(
      threads, tasks, 1, [] { return Scratch{}; },
      [&](Scratch& s, std::int64_t t) {
        const std::int64_t first = t * kQueriesPerTask, m = std::min(kQueriesPerTask, n - first);
        vote_task(queries, first, m, points, count, width, point_labels, k, s, done[static_cast<std::size_t>(t)]);
      });
  return join_rows(done, n);
}

}  // namespace slide
