#include "label_tree/sparse_dual_cd.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "common/parallel.h"
#include "rerank/gathered_label.h"

namespace slide {

namespace {

struct Kept {
  std::vector<std::pair<std::int32_t, float>> weights;  // (feature, weight), features ascending
  float bias = 0.0f;
};

}  // namespace

SparseClassifiers sparse_dual_cd(const CsrFloat& x, const LabelPoints& points, std::int64_t tasks,
                                 const DualCdSettings& settings, float threshold, int threads, double* loss) {
  std::vector<Kept> kept(static_cast<std::size_t>(tasks));
  std::vector<double> losses(static_cast<std::size_t>(tasks), 0.0);
  const LabelPoints from_zero{points.indptr, points.rows, points.positive, nullptr};
  parallel_for(
      threads, tasks, 4, [] { return GatheredLabel{}; },
      [&](GatheredLabel& l, std::int64_t task) {
        if (points.indptr[task + 1] == points.indptr[task]) return;
        const auto label = static_cast<std::int32_t>(task);
        gather_features(x, from_zero, label, l);
        Kept& out = kept[static_cast<std::size_t>(task)];
        losses[static_cast<std::size_t>(task)] = solve_gathered(x, from_zero, label, settings, out.bias, l);
        for (std::size_t f = 0; f < l.features.size(); ++f)
          if (std::fabs(l.weights[f]) >= threshold) out.weights.emplace_back(l.features[f], l.weights[f]);
        std::sort(out.weights.begin(), out.weights.end());
        release_features(l);
      });
  SparseClassifiers out;
  out.indptr.assign(1, 0);
  out.bias.reserve(static_cast<std::size_t>(tasks));
  std::size_t total = 0;
  for (const Kept& k : kept) total += k.weights.size();
  out.indices.reserve(total);
  out.values.reserve(total);
  for (Kept& k : kept) {
    for (const auto& [feature, weight] : k.weights) {
      out.indices.push_back(feature);
      out.values.push_back(weight);
    }
    out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
    out.bias.push_back(k.bias);
    k.weights = {};
  }
  const std::int64_t pairs = points.indptr[tasks];
  if (loss) *loss = pairs ? std::accumulate(losses.begin(), losses.end(), 0.0) / static_cast<double>(pairs) : 0.0;
  return out;
}

void sparse_pair_scores(const CsrFloat& x, const std::int64_t* rows, const std::int32_t* tasks, std::int64_t pairs,
                        const SparseClassifiersView& w, float* out, int threads) {
  parallel_team(threads, [&](int t, int team) {
    const std::int64_t begin = pairs * t / team, end = pairs * (t + 1) / team;
    std::vector<float> dense(static_cast<std::size_t>(x.cols), 0.0f);
    std::int64_t spread = -1;  // the row `dense` holds
    for (std::int64_t p = begin; p < end; ++p) {
      const std::int64_t row = rows[p];
      if (row != spread) {
        if (spread >= 0)
          for (std::int64_t j = x.indptr[spread]; j < x.indptr[spread + 1]; ++j)
            dense[static_cast<std::size_t>(x.indices[j])] = 0.0f;
        for (std::int64_t j = x.indptr[row]; j < x.indptr[row + 1]; ++j)
          dense[static_cast<std::size_t>(x.indices[j])] += x.data[j];
        spread = row;
      }
      const std::int32_t task = tasks[p];
      float score = w.bias[task];
      for (std::int64_t j = w.indptr[task]; j < w.indptr[task + 1]; ++j)
        score += w.values[j] * dense[static_cast<std::size_t>(w.indices[j])];
      out[p] = score;
    }
  });
}

}  // namespace slide
