#include "rerank/dual_cd_hinge.h"

#include <numeric>
#include <vector>

#include "common/parallel.h"
#include "rerank/gathered_label.h"
#include "rerank/hashed_weights.h"

namespace slide {

namespace {

// The solver's problem over the label's features (rerank/gathered_label.h), its weights read from
// the table and the change written back: solving against the table itself missed the cache on
// every feature of every step (debian-deps, 2 threads: 7.4 s against 2.2 s gathered; liblinear
// through scikit-learn, 14.7 s).
struct Local {
  GatheredLabel label;
  std::vector<float> start;
};

// Writes the change to the label's weights back into the table (slots it shares with another
// label keep that label's part), the local view's change over `adders` (the view holds it that
// many times over).
void scatter(std::int32_t label, const RerankerWeights& w, float adders, const Local& l) {
  const std::int64_t mask = w.size - 1;
  for (std::size_t f = 0; f < l.label.features.size(); ++f) {
    const HashedSlot slot = slot_of(label, l.label.features[f], mask);
    w.slots[2 * slot.index] += slot.sign * (l.label.weights[f] - l.start[f]) / adders;
  }
}

// Solves one label and returns its squared hinge loss summed over its points, scored with the
// weights it solved for (labels that share a slot with it may move the table's copy afterwards).
double train_label(const CsrFloat& x, const LabelPoints& points, std::int32_t label, const RerankerWeights& w,
                   const DualCdSettings& s, Local& l) {
  gather_features(x, points, label, l.label);
  const std::int64_t mask = w.size - 1;
  for (std::size_t f = 0; f < l.label.features.size(); ++f) {
    const HashedSlot slot = slot_of(label, l.label.features[f], mask);
    l.label.weights[f] = slot.sign * w.slots[2 * slot.index];
  }
  l.start = l.label.weights;
  const float start_bias = w.bias[2 * label];
  float bias = start_bias;
  const double loss = solve_gathered(x, points, label, s, bias, l.label);
  scatter(label, w, s.adders, l);
  release_features(l.label);
  w.bias[2 * label] += (bias - start_bias) / s.adders;
  return loss;
}

}  // namespace

double reranker_dual_cd(const CsrFloat& x, const LabelPoints& points, const RerankerWeights& w,
                        const DualCdSettings& settings, int threads) {
  // Each label's loss from its own gathered weights: scoring every (point, label) pair through
  // the hashed table afterwards missed the cache on every feature (1.1 s of debian-deps' 4.9 M pairs).
  std::vector<double> loss(static_cast<std::size_t>(w.labels), 0.0);
  parallel_for(
      threads, w.labels, 16, [] { return Local{}; },
      [&](Local& local, std::int64_t label) {
        if (points.indptr[label + 1] > points.indptr[label])
          loss[static_cast<std::size_t>(label)] =
              train_label(x, points, static_cast<std::int32_t>(label), w, settings, local);
      });
  const std::int64_t total = points.indptr[w.labels];
  return total ? std::accumulate(loss.begin(), loss.end(), 0.0) / static_cast<double>(total) : 0.0;
}

}  // namespace slide
