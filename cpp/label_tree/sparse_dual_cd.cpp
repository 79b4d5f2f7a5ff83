#include "label_tree/sparse_dual_cd.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "common/parallel.h"
#include "label_tree/leaf_dual_cd.h"
#include "rerank/gathered_label.h"

namespace slide {

namespace {

struct Kept {
  std::vector<std::pair<std::int32_t, float>> weights;  // (feature, weight), features ascending
  float bias = 0.0f;
};

// A thread's scratch: the points gathered for a run of tasks, and a leaf's block.
struct Solving {
  GatheredLabel label;
  LeafBlock leaf;
  std::vector<double> losses;
};

// From this many tasks on the same points (a leaf's labels), the tasks are solved together
// (label_tree/leaf_dual_cd.h); a node's two children, or a leaf of fewer labels, one by one, with
// liblinear's shrinking. debian-rdeps' leaves of 100 labels: see leaf_dual_cd.h.
constexpr std::int64_t kTogetherFrom = 4;

void keep_weights(const std::vector<std::int32_t>& features, const float* weights, std::size_t stride, float bias,
                  float threshold, Kept& out) {
  for (std::size_t f = 0; f < features.size(); ++f) {
    const float w = weights[f * stride];
    if (std::fabs(w) >= threshold) out.weights.emplace_back(features[f], w);
  }
  std::sort(out.weights.begin(), out.weights.end());
  out.bias = bias;
}

bool same_points(const LabelPoints& points, std::int64_t a, std::int64_t b) {
  const std::int64_t length = points.indptr[a + 1] - points.indptr[a];
  return length == points.indptr[b + 1] - points.indptr[b] &&
         std::equal(points.rows + points.indptr[a], points.rows + points.indptr[a + 1], points.rows + points.indptr[b]);
}

// The tasks in an order that puts those on the same points side by side: Parabel's rule gives a
// node's two children the points that reach it, and every label of a leaf the leaf's points, so
// each such run is one piece of work: its features gathered once, a leaf's labels solved together.
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
  std::vector<std::int64_t> runs;  // where each run of tasks on the same points starts in `order`
  for (std::int64_t p = 0; p < tasks; ++p)
    if (p == 0 || !same_points(points, order[static_cast<std::size_t>(p) - 1], order[static_cast<std::size_t>(p)]))
      runs.push_back(p);
  runs.push_back(tasks);
  parallel_for(
      threads, static_cast<std::int64_t>(runs.size()) - 1, 1, [] { return Solving{}; },
      [&](Solving& solving, std::int64_t run) {
        const std::int64_t* run_tasks = order.data() + runs[static_cast<std::size_t>(run)];
        const std::int64_t count = runs[static_cast<std::size_t>(run) + 1] - runs[static_cast<std::size_t>(run)];
        if (points.indptr[run_tasks[0] + 1] == points.indptr[run_tasks[0]]) return;
        GatheredLabel& l = solving.label;
        gather_features(x, from_zero, static_cast<std::int32_t>(run_tasks[0]), l);
        release_features(l);  // `place` is only for gathering; `features` and `local` stay
        if (count >= kTogetherFrom) {
          solving.losses.resize(static_cast<std::size_t>(count));
          solve_leaf(x, from_zero, run_tasks, count, settings, l, solving.leaf, solving.losses.data());
          for (std::int64_t j = 0; j < count; ++j) {
            const auto task = static_cast<std::size_t>(run_tasks[j]);
            losses[task] = solving.losses[static_cast<std::size_t>(j)];
            keep_weights(l.features, solving.leaf.weights.data() + j, static_cast<std::size_t>(count),
                         solving.leaf.bias[static_cast<std::size_t>(j)], threshold, kept[task]);
          }
          return;
        }
        for (std::int64_t j = 0; j < count; ++j) {
          const std::int64_t task = run_tasks[j];
          l.weights.assign(l.features.size(), 0.0f);
          float bias = 0.0f;
          losses[static_cast<std::size_t>(task)] =
              solve_gathered(x, from_zero, static_cast<std::int32_t>(task), settings, bias, l);
          keep_weights(l.features, l.weights.data(), 1, bias, threshold, kept[static_cast<std::size_t>(task)]);
        }
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
