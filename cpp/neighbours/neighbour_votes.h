// The nearest-neighbour vote of slide.neighbours, exact and without a dense similarity matrix:
// a query's similarities are summed over the inverted index of the remembered points (feature ->
// points), only the points that share a feature with it are ever touched, and the k most similar
// of those cast their similarity as a vote for each of their labels.
#pragma once
#include <cstdint>
#include <vector>

#include "common/sparse_view.h"

namespace slide {

// (queries x labels) in CSR: labels ascending within a row, each with the sum of the similarities
// of the query's k nearest points that carry it, over k.
struct NeighbourVotes {
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> labels;
  std::vector<float> votes;
};

// `by_feature` is the points' transpose (features x points); similarities are dot products, so
// with unit rows they are cosines. The k nearest are the k largest positive similarities, ties
// to the lower point id: a point with no positive similarity has nothing to vote with.
NeighbourVotes neighbour_votes(const CsrFloat& queries, const CsrFloat& by_feature, const CsrIds& point_labels,
                               int k, int threads);

}  // namespace slide
