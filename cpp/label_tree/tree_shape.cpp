#include "label_tree/tree_shape.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "common/parallel.h"
#include "common/rng.h"

namespace slide {

namespace {

// A dense vector over the features, zeroed after each use only where touched: a small node's
// labels use a few thousand of the features.
struct SparseDense {
  std::vector<float> value;
  std::vector<std::int32_t> touched;
  std::vector<std::uint8_t> is_touched;

  explicit SparseDense(std::int64_t features)
      : value(static_cast<std::size_t>(features), 0.0f), is_touched(static_cast<std::size_t>(features), 0) {}

  void clear() {
    for (const std::int32_t f : touched) {
      value[static_cast<std::size_t>(f)] = 0.0f;
      is_touched[static_cast<std::size_t>(f)] = 0;
    }
    touched.clear();
  }

  void add(const CsrFloat& v, std::int64_t label) {
    for (std::int64_t j = v.indptr[label]; j < v.indptr[label + 1]; ++j) {
      const auto f = static_cast<std::size_t>(v.indices[j]);
      if (!is_touched[f]) {
        is_touched[f] = 1;
        touched.push_back(v.indices[j]);
      }
      value[f] += v.data[j];
    }
  }

  double dot(const SparseDense& other) const {
    double sum = 0.0;
    for (const std::int32_t f : touched)
      sum += static_cast<double>(value[static_cast<std::size_t>(f)]) * other.value[static_cast<std::size_t>(f)];
    return sum;
  }

  void normalise() {
    const double norm = dot(*this);
    const float scale = norm > 0.0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
    for (const std::int32_t f : touched) value[static_cast<std::size_t>(f)] *= scale;
  }
};

// A thread's scratch for splitting: the two halves' centroids, the sums that become the next
// ones, and the centroids' difference, which ranks the labels.
struct Centroids {
  SparseDense left, right, next_left, next_right, difference;
  std::vector<float> nearer;  // similarity to the left minus to the right
  std::vector<std::int64_t> order;
  std::vector<std::uint8_t> goes_left;

  explicit Centroids(std::int64_t features)
      : left(features), right(features), next_left(features), next_right(features), difference(features) {}

  void clear() {
    for (SparseDense* c : {&left, &right, &next_left, &next_right, &difference}) c->clear();
  }

  // difference = left - right, over the features either touches
  void subtract() {
    difference.clear();
    for (const SparseDense* c : {&left, &right}) {
      for (const std::int32_t f : c->touched) {
        const auto i = static_cast<std::size_t>(f);
        if (!difference.is_touched[i]) {
          difference.is_touched[i] = 1;
          difference.touched.push_back(f);
          difference.value[i] = left.value[i] - right.value[i];
        }
      }
    }
  }
};

// Splits `labels` in two halves (the first labels.size() / 2 go left), in place: the labels nearer
// the left centroid than the right one (cosine) first.
void split(const CsrFloat& v, std::vector<std::int64_t>& labels, const TwoMeansSettings& s, std::uint64_t seed,
           Centroids& c) {
  const auto n = static_cast<std::int64_t>(labels.size());
  const std::int64_t half = n / 2;
  Rng rng(seed);
  const std::int64_t first = rng.below(static_cast<std::uint32_t>(n));
  std::int64_t second = rng.below(static_cast<std::uint32_t>(n - 1));
  if (second >= first) ++second;
  c.left.add(v, labels[static_cast<std::size_t>(first)]);
  c.right.add(v, labels[static_cast<std::size_t>(second)]);
  c.nearer.resize(static_cast<std::size_t>(n));
  c.order.resize(static_cast<std::size_t>(n));
  c.goes_left.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> reordered(static_cast<std::size_t>(n));
  double previous = -std::numeric_limits<double>::infinity();
  for (int iteration = 0; iteration < s.max_iterations; ++iteration) {
    // One product a label with the centroids' difference ranks it (v.left - v.right), where two
    // products, one with each centroid, cost twice the reads.
    c.subtract();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t label = labels[static_cast<std::size_t>(i)];
      float nearer = 0.0f;
      for (std::int64_t j = v.indptr[label]; j < v.indptr[label + 1]; ++j)
        nearer += v.data[j] * c.difference.value[static_cast<std::size_t>(v.indices[j])];
      c.nearer[static_cast<std::size_t>(i)] = nearer;
    }
    // The halves need the median, not an order: nth_element finds it (ties by position, so the
    // halves do not depend on its implementation), and each half keeps the labels' order before.
    std::iota(c.order.begin(), c.order.end(), std::int64_t{0});
    std::nth_element(c.order.begin(), c.order.begin() + half, c.order.end(), [&](std::int64_t a, std::int64_t b) {
      const float da = c.nearer[static_cast<std::size_t>(a)], db = c.nearer[static_cast<std::size_t>(b)];
      return da > db || (da == db && a < b);
    });
    std::fill(c.goes_left.begin(), c.goes_left.end(), std::uint8_t{0});
    for (std::int64_t i = 0; i < half; ++i) c.goes_left[static_cast<std::size_t>(c.order[static_cast<std::size_t>(i)])] = 1;
    std::int64_t to_left = 0, to_right = half;
    for (std::int64_t i = 0; i < n; ++i)
      reordered[static_cast<std::size_t>(c.goes_left[static_cast<std::size_t>(i)] ? to_left++ : to_right++)] =
          labels[static_cast<std::size_t>(i)];
    labels.swap(reordered);
    if (iteration + 1 == s.max_iterations) break;  // no next centroids, so no objective to stop on
    for (std::int64_t i = 0; i < n; ++i) (i < half ? c.next_left : c.next_right).add(v, labels[static_cast<std::size_t>(i)]);
    // k-means' objective, each label's similarity to the centroid of its side: the assignment and
    // the centroids' update each raise it, so it stops rising only where the split has settled
    // (the difference of the two similarities, which the ranking uses, need not rise, and stopping
    // on it left groups of labels that share no feature under one node). Summed over a side it is
    // the side's sum of vectors (the next centroid before scaling) times the side's centroid.
    const double objective = c.next_left.dot(c.left) + c.next_right.dot(c.right);
    if (objective - previous <= s.tolerance * std::fabs(objective)) break;
    previous = objective;
    std::swap(c.left, c.next_left);
    std::swap(c.right, c.next_right);
    c.next_left.clear();
    c.next_right.clear();
    c.left.normalise();
    c.right.normalise();
  }
  c.clear();
}

}  // namespace

TreeShapeArrays build_tree_shape(const CsrFloat& vectors, const TwoMeansSettings& s, int threads) {
  std::vector<std::vector<std::int64_t>> nodes(1);  // each node's labels, breadth first
  nodes[0].resize(static_cast<std::size_t>(vectors.rows));
  std::iota(nodes[0].begin(), nodes[0].end(), std::int64_t{0});
  TreeShapeArrays out;
  std::size_t level_begin = 0;
  while (level_begin < nodes.size()) {
    const std::size_t level_end = nodes.size();
    const auto count = static_cast<std::int64_t>(level_end - level_begin);
    parallel_for(
        threads, count, 1, [&] { return Centroids(vectors.cols); },
        [&](Centroids& c, std::int64_t i) {
          const std::size_t node = level_begin + static_cast<std::size_t>(i);
          if (static_cast<std::int64_t>(nodes[node].size()) > s.leaf_size)
            split(vectors, nodes[node], s, mix64(s.seed ^ (node * 0x9E3779B97F4A7C15ull)), c);
        });
    for (std::size_t node = level_begin; node < level_end; ++node) {
      std::vector<std::int64_t>& labels = nodes[node];
      if (static_cast<std::int64_t>(labels.size()) <= s.leaf_size) {
        out.children.insert(out.children.end(), {-1, -1});
        continue;
      }
      const std::size_t half = labels.size() / 2;
      out.children.insert(out.children.end(),
                          {static_cast<std::int64_t>(nodes.size()), static_cast<std::int64_t>(nodes.size() + 1)});
      std::vector<std::int64_t> left(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(half));
      std::vector<std::int64_t> right(labels.begin() + static_cast<std::ptrdiff_t>(half), labels.end());
      std::sort(left.begin(), left.end());
      std::sort(right.begin(), right.end());
      labels.clear();
      labels.shrink_to_fit();
      nodes.push_back(std::move(left));
      nodes.push_back(std::move(right));
    }
    level_begin = level_end;
  }
  out.leaf_indptr.assign(1, 0);
  for (std::size_t node = 0; node < nodes.size(); ++node) {
    const bool leaf = out.children[2 * node] < 0;
    if (leaf) {
      std::sort(nodes[node].begin(), nodes[node].end());
      out.leaf_labels.insert(out.leaf_labels.end(), nodes[node].begin(), nodes[node].end());
    }
    out.leaf_indptr.push_back(static_cast<std::int64_t>(out.leaf_labels.size()));
  }
  return out;
}

}  // namespace slide
