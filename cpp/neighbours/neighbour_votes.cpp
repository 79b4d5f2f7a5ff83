#include "neighbours/neighbour_votes.h"

#include <algorithm>
#include <utility>

#include "common/check.h"
#include "common/parallel.h"
#include "neighbours/vote_rows.h"

namespace slide {

namespace {

constexpr std::int64_t kQueriesPerTask = 32;

// One thread's similarity accumulator over every point, cleared after each query by visiting
// only the points that query touched. A point is listed when its sum leaves zero, so one that
// returns to zero (values of both signs) may be listed twice: the first visit takes its sum and
// clears it, the second finds zero.
struct Scratch {
  explicit Scratch(std::int64_t points) : similarity(points, 0.0f) {}
  std::vector<float> similarity;
  std::vector<std::int32_t> touched;
  std::vector<std::pair<float, std::int32_t>> nearest;  // a heap, the farthest on top
  std::vector<std::pair<std::int32_t, float>> cast;
};

void vote_for(std::int64_t q, const CsrFloat& queries, const CsrFloat& by_feature, const CsrIds& point_labels,
              int k, Scratch& s, VoteRows& out) {
  // Listing a point is branch-free (its id is always written, the count moves only for a first
  // touch), so the list has room for every posting the query visits.
  std::int64_t postings = 0;
  for (std::int64_t i = queries.indptr[q]; i < queries.indptr[q + 1]; ++i)
    postings += by_feature.indptr[queries.indices[i] + 1] - by_feature.indptr[queries.indices[i]];
  if (s.touched.size() < static_cast<std::size_t>(postings) + 1) s.touched.resize(postings + 1);
  float* const __restrict similarity = s.similarity.data();
  std::int32_t* const __restrict touched = s.touched.data();
  const std::int32_t* const __restrict points = by_feature.indices;
  const float* const __restrict values = by_feature.data;
  std::int64_t listed = 0;
  for (std::int64_t i = queries.indptr[q]; i < queries.indptr[q + 1]; ++i) {
    const std::int32_t f = queries.indices[i];
    const float v = queries.data[i];
    for (std::int64_t j = by_feature.indptr[f], end = by_feature.indptr[f + 1]; j < end; ++j) {
      const std::int32_t p = points[j];
      const float sum = similarity[p];
      touched[listed] = p;
      listed += sum == 0.0f;
      similarity[p] = sum + v * values[j];
    }
  }
  const auto closer = [](const std::pair<float, std::int32_t>& a, const std::pair<float, std::int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  s.nearest.clear();
  for (std::int64_t i = 0; i < listed; ++i) {
    const std::int32_t p = touched[i];
    const std::pair<float, std::int32_t> candidate(similarity[p], p);
    similarity[p] = 0.0f;
    if (!(candidate.first > 0.0f)) continue;
    if (s.nearest.size() < static_cast<std::size_t>(k)) {
      s.nearest.push_back(candidate);
      std::push_heap(s.nearest.begin(), s.nearest.end(), closer);
    } else if (closer(candidate, s.nearest.front())) {
      std::pop_heap(s.nearest.begin(), s.nearest.end(), closer);
      s.nearest.back() = candidate;
      std::push_heap(s.nearest.begin(), s.nearest.end(), closer);
    }
  }
  std::sort(s.nearest.begin(), s.nearest.end(), closer);  // a fixed summing order
  cast_votes(s.nearest, point_labels, k, s.cast, out);
}

}  // namespace

NeighbourVotes neighbour_votes(const CsrFloat& queries, const CsrFloat& by_feature, const CsrIds& point_labels,
                               int k, int threads) {
  SLIDE_REQUIRE(k >= 1, "neighbour_votes: k must be at least 1, got " << k);
  SLIDE_REQUIRE(by_feature.rows == queries.cols, "neighbour_votes: the index has " << by_feature.rows
                                                     << " features, the queries " << queries.cols);
  SLIDE_REQUIRE(by_feature.cols == point_labels.rows, "neighbour_votes: the index has " << by_feature.cols
                                                          << " points, the labels " << point_labels.rows);
  const std::int64_t n = queries.rows;
  const std::int64_t tasks = (n + kQueriesPerTask - 1) / kQueriesPerTask;
  std::vector<VoteRows> done(static_cast<std::size_t>(tasks));
  parallel_for(
      threads, tasks, 1, [&] { return Scratch(by_feature.cols); },
      [&](Scratch& s, std::int64_t t) {
        const std::int64_t end = std::min(n, (t + 1) * kQueriesPerTask);
        for (std::int64_t q = t * kQueriesPerTask; q < end; ++q)
          vote_for(q, queries, by_feature, point_labels, k, s, done[static_cast<std::size_t>(t)]);
      });
  return join_rows(done, n);
}

}  // namespace slide
