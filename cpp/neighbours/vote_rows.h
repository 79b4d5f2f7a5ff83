// What both searches of slide.neighbours share once they have a query's nearest points: the
// points' labels cast the points' similarities as votes, summed per label over k, one CSR row per
// query; and the rows of many tasks joined in query order.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "common/sparse_view.h"
#include "neighbours/neighbour_votes.h"

namespace slide {

// The rows of one task's consecutive queries.
struct VoteRows {
  std::vector<std::int64_t> row_lengths;
  std::vector<std::int32_t> labels;
  std::vector<float> votes;
};

// Appends one query's row: `nearest` (similarity, point), closest first, which fixes the order
// the similarities are summed in; `cast` is scratch.
void cast_votes(const std::vector<std::pair<float, std::int32_t>>& nearest, const CsrIds& point_labels, int k,
                std::vector<std::pair<std::int32_t, float>>& cast, VoteRows& out);

// The tasks' rows, in task order, as one CSR matrix of `queries` rows.
NeighbourVotes join_rows(const std::vector<VoteRows>& tasks, std::int64_t queries);

}  // namespace slide
