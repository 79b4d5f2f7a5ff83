// The fused ranking's top-k (slide.neighbours.Fusion.top): each query's candidates scored as
// logit + (weight x vote + rerank_weight x re-ranker score) and the k best kept in one pass. Tuning
// the fusion weights ranks the same candidates for each of 91 weight pairs; sorting every
// candidate for each took most of that (debian-rdeps' validation, where one query's neighbours
// vote for thousands of labels: 0.9 s of its 1.2 s tuning).
#pragma once
#include <cstdint>

namespace slide {

// Candidates are grouped by query: query q's are [starts[q], starts[q] + counts[q]). Writes each
// query's k best (ids, fused scores) best first to out_ids/out_scores (k per query); -1 and -inf
// where a query has fewer than k. Ties keep the earlier candidate; NaN ranks below every number.
// Each score is rounded as NumPy's float32 arithmetic rounds it (two products, their sum, then
// the logit; no fused multiply-add), so the ranking is the one the scores it returns give.
void fused_top_k(std::int64_t queries, const std::int64_t* starts, const std::int64_t* counts, const std::int32_t* ids,
                 const float* logits, const float* vote, const float* rerank, float weight, float rerank_weight,
                 int k, std::int32_t* out_ids, float* out_scores);

}  // namespace slide
