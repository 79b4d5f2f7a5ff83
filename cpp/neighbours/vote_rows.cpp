#include "neighbours/vote_rows.h"

#include <algorithm>

namespace slide {

void cast_votes(const std::vector<std::pair<float, std::int32_t>>& nearest, const CsrIds& point_labels, int k,
                std::vector<std::pair<std::int32_t, float>>& cast, VoteRows& out) {
  cast.clear();
  for (const auto& [similarity, p] : nearest)
    for (std::int64_t j = point_labels.indptr[p]; j < point_labels.indptr[p + 1]; ++j)
      cast.emplace_back(point_labels.indices[j], similarity);
  std::stable_sort(cast.begin(), cast.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t before = out.labels.size();
  for (std::size_t i = 0; i < cast.size();) {
    const std::int32_t label = cast[i].first;
    float total = 0.0f;
    for (; i < cast.size() && cast[i].first == label; ++i) total += cast[i].second;
    out.labels.push_back(label);
    out.votes.push_back(total / static_cast<float>(k));
  }
  out.row_lengths.push_back(static_cast<std::int64_t>(out.labels.size() - before));
}

NeighbourVotes join_rows(const std::vector<VoteRows>& tasks, std::int64_t queries) {
  NeighbourVotes result;
  result.indptr.reserve(static_cast<std::size_t>(queries + 1));
  result.indptr.push_back(0);
  std::size_t total = 0;
  for (const VoteRows& t : tasks) total += t.labels.size();
  result.labels.reserve(total);
  result.votes.reserve(total);
  for (const VoteRows& t : tasks) {
    for (const std::int64_t len : t.row_lengths) result.indptr.push_back(result.indptr.back() + len);
    result.labels.insert(result.labels.end(), t.labels.begin(), t.labels.end());
    result.votes.insert(result.votes.end(), t.votes.begin(), t.votes.end());
  }
  return result;
}

}  // namespace slide
