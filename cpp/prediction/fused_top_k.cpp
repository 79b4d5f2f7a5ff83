#include "prediction/fused_top_k.h"

#include <cmath>
#include <limits>

namespace slide {

namespace {

// Whether score a ranks above b: NaN below every number, equal scores not above.
inline bool above(float a, float b) { return !std::isnan(a) && (std::isnan(b) || a > b); }

// The fused score, each operation rounded to float32 on its own. volatile keeps a compiler from
// contracting a product and a sum into one fused multiply-add, which rounds once instead of twice.
inline float fused_score(float logit, float vote, float rerank, float weight, float rerank_weight) {
  volatile float voted = weight * vote;
  volatile float reranked = rerank_weight * rerank;
  volatile float boost = voted + reranked;
  return logit + boost;
}

}  // namespace

void fused_top_k(std::int64_t queries, const std::int64_t* starts, const std::int64_t* counts, const std::int32_t* ids,
                 const float* logits, const float* vote, const float* rerank, float weight, float rerank_weight,
                 int k, std::int32_t* out_ids, float* out_scores) {
  for (std::int64_t q = 0; q < queries; ++q) {
    std::int32_t* best_ids = out_ids + q * k;
    float* best = out_scores + q * k;
    int held = 0;
    for (std::int64_t c = starts[q], end = starts[q] + counts[q]; c < end; ++c) {
      const float s = fused_score(logits[c], vote[c], rerank[c], weight, rerank_weight);
      if (held == k && !above(s, best[k - 1])) continue;
      int at = held < k ? held++ : k - 1;  // the slot it takes, then moved up past every worse one
      for (; at > 0 && above(s, best[at - 1]); --at) {
        best[at] = best[at - 1];
        best_ids[at] = best_ids[at - 1];
      }
      best[at] = s;
      best_ids[at] = ids[c];
    }
    for (int i = held; i < k; ++i) {
      best_ids[i] = -1;
      best[i] = -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace slide
