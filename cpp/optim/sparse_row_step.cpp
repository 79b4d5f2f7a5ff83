#include "optim/sparse_row_step.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "common/aligned_array.h"
#include "common/check.h"
#include "common/parallel.h"
#include "simd/kernels.h"

namespace slide {

namespace {

// Positions of g's value rows grouped by row index (ascending; within a row in their given order,
// so the sums are the same at any thread count), and where each distinct row's group starts.
struct RowGroups {
  std::vector<std::uint32_t> order;
  std::vector<std::size_t> starts;  // one past the last group too
};

RowGroups group_rows(const SparseRowGradient& g) {
  RowGroups r;
  r.order.resize(g.count);
  std::iota(r.order.begin(), r.order.end(), 0u);
  std::stable_sort(r.order.begin(), r.order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return g.index[a] < g.index[b]; });
  for (std::size_t i = 0; i < g.count; ++i)
    if (i == 0 || g.index[r.order[i]] != g.index[r.order[i - 1]]) r.starts.push_back(i);
  r.starts.push_back(g.count);
  return r;
}

}  // namespace

std::size_t sparse_row_step(const OptimizerStep& step, float* weights, float* const* state, std::size_t states,
                            std::size_t rows, const SparseRowGradient& g, int threads) {
  SLIDE_REQUIRE(g.count <= UINT32_MAX, "a sparse gradient has at most 2^32 - 1 value rows, got " << g.count);
  for (std::size_t i = 0; i < g.count; ++i)
    SLIDE_REQUIRE(g.index[i] >= 0 && static_cast<std::uint64_t>(g.index[i]) < rows,
                  "the sparse gradient names row " << g.index[i] << " of a parameter with " << rows << " rows");
  SLIDE_ASSERT(states <= 2);
  const RowGroups groups = group_rows(g);
  const std::size_t distinct = groups.starts.size() - 1, width = g.width;
  const Kernels& k = kernels();
  parallel_for(
      threads, static_cast<std::int64_t>(distinct), 64,
      [&] {
        // The optimizer kernels read the summed gradient and zero it, so it starts at zero once.
        return AlignedArray<float>(width);
      },
      [&](AlignedArray<float>& sum, std::int64_t d) {
        const std::size_t begin = groups.starts[d], end = groups.starts[d + 1];
        const std::size_t row = static_cast<std::size_t>(g.index[groups.order[begin]]);
        for (std::size_t i = begin; i < end; ++i) k.axpy(1.0f, g.values + groups.order[i] * width, sum.data(), width);
        float* row_state[2];
        for (std::size_t s = 0; s < states; ++s) row_state[s] = state[s] + row * width;
        step.apply(k, weights + row * width, row_state, sum.data(), width);
      });
  return distinct;
}

}  // namespace slide
