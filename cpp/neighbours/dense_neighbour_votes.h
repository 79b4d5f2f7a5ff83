// The nearest-neighbour vote of slide.neighbours over dense representations: each point's and each
// query's top hidden layer (unit rows, so dot products are cosines). There is no index to prune
// with, and the rows are short (the hidden width), so every query meets every point in a blocked
// matrix product, exactly, and its k largest positive similarities vote as in neighbour_votes.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "neighbours/neighbour_votes.h"

namespace slide {

// queries: n x width, points: count x width, both row-major. Ties go to the lower point id; a point
// with no positive similarity has nothing to vote with.
NeighbourVotes dense_neighbour_votes(const float* queries, std::int64_t n, const float* points, std::int64_t count,
                                     std::int64_t width, const CsrIds& point_labels, int k, int threads);

}  // namespace slide
