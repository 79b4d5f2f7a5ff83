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

// A thread's scratch, and the task whose points it has gathered.
struct Solving {
  GatheredLabel label;
  std::int64_t gathered = -1;
};

bool same_points(const LabelPoints& points, std::int64_t a, std::int64_t b) {
  const std::int64_t length = points.indptr[a + 1] - points.indptr[a];
  return length == points.indptr[b + 1] - points.indptr[b] &&
         std::equal(points.rows + points.indptr[a], points.rows + points.indptr[a + 1], points.rows + points.indptr[b]);
}

// The tasks in an order that puts those on the same points side by side: Parabel's rule gives a
// node's two children the points that reach it, and every label of a leaf the leaf's points, so a
// thread that takes them one after another gathers their features once.
std::vector<std::int64_t> shared_points_order(const LabelPoints& points, std::int64_t tasks) {
  std::vector<std::uint64_t> fingerprint(static_cast<std::size_t>(tasks));
  for (std::int64_t t = 0; t < tasks; ++t) {
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the task's rows
    for (std::int64_t j = points.indptr[t]; j < points.indptr[t + 1]; ++j)
      h = (h ^ static_cast<std::uint64_t>(points.rows[j])) * 0x100000001b3ull;
    fingerprint[static_cast<std::size_t>(t)] = h;
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(tasks));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const std::uint64_t fa = fingerprint[static_cast<std::size_t>(a)], fb = fingerprint[static_cast<std::size_t>(b)];
    return fa < fb || (fa == fb && a < b);
  });
  return order;
}

}  // namespace

SparseClassifiers sparse_dual_cd(const CsrFloat& x, const LabelPoints& points, std::int64_t tasks,
                                 const DualCdSettings& settings, float threshold, int threads, double* loss) {
  std::vector<Kept> kept(static_cast<std::size_t>(tasks));
  std::vector<double> losses(static_cast<std::size_t>(tasks), 0.0);
  const LabelPoints from_zero{points.indptr, points.rows, points.positive, nullptr};
  const std::vector<std::int64_t> order = shared_points_order(points, tasks);
  parallel_for(
      threads, tasks, 8, [] { return Solving{}; },
      [&](Solving& solving, std::int64_t position) {
        const std::int64_t task = order[static_cast<std::size_t>(position)];
        if (points.indptr[task + 1] == points.indptr[task]) return;
        const auto label = static_cast<std::int32_t>(task);
        GatheredLabel& l = solving.label;
        if (solving.gathered >= 0 && same_points(points, solving.gathered, task)) {
          l.weights.assign(l.features.size(), 0.0f);  // the features as gathered for the task before
        } else {
          gather_features(x, from_zero, label, l);
          release_features(l);  // `place` is only for gathering; `features` and `local` stay
          solving.gathered = task;
        }
        Kept& out = kept[static_cast<std::size_t>(task)];
        losses[static_cast<std::size_t>(task)] = solve_gathered(x, from_zero, label, settings, out.bias, l);
        for (std::size_t f = 0; f < l.features.size(); ++f)
          if (std::fabs(l.weights[f]) >= threshold) out.weights.emplace_back(l.features[f], l.weights[f]);
        std::sort(out.weights.begin(), out.weights.end());
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
  // The pairs grouped by task (a counting sort), so that each task's weights are spread over a
  // dense vector once and each of its pairs reads only its point's features: a pair costs the
  // point's ~40 features, not the task's row (a tree's upper nodes hold thousands of weights).
  std::vector<std::int64_t> first(static_cast<std::size_t>(w.tasks) + 1, 0);
  for (std::int64_t p = 0; p < pairs; ++p) ++first[static_cast<std::size_t>(tasks[p]) + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  std::vector<std::int64_t> by_task(static_cast<std::size_t>(pairs));
  {
    std::vector<std::int64_t> next(first.begin(), first.end() - 1);
    for (std::int64_t p = 0; p < pairs; ++p) by_task[static_cast<std::size_t>(next[static_cast<std::size_t>(tasks[p])]++)] = p;
  }
  parallel_for(
      threads, w.tasks, 16, [&] { return std::vector<float>(static_cast<std::size_t>(x.cols), 0.0f); },
      [&](std::vector<float>& dense, std::int64_t task) {
        const std::int64_t begin = first[static_cast<std::size_t>(task)], end = first[static_cast<std::size_t>(task) + 1];
        if (begin == end) return;
        for (std::int64_t j = w.indptr[task]; j < w.indptr[task + 1]; ++j)
          dense[static_cast<std::size_t>(w.indices[j])] += w.values[j];
        for (std::int64_t q = begin; q < end; ++q) {
          const std::int64_t p = by_task[static_cast<std::size_t>(q)], row = rows[p];
          float score = w.bias[task];
          for (std::int64_t j = x.indptr[row]; j < x.indptr[row + 1]; ++j)
            score += x.data[j] * dense[static_cast<std::size_t>(x.indices[j])];
          out[p] = score;
        }
        for (std::int64_t j = w.indptr[task]; j < w.indptr[task + 1]; ++j)
          dense[static_cast<std::size_t>(w.indices[j])] = 0.0f;
      });
}

}  // namespace slide
