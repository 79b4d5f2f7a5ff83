// One optimizer step over the rows a sparse gradient names, the way PyTorch hands one over
// (nn.Embedding(sparse=True)): a row index per value row, repeated when a batch touches a row more
// than once. Each distinct row steps once, with the sum of its value rows, and no other row moves.
#pragma once
#include <cstddef>
#include <cstdint>

#include "optim/optimizer.h"

namespace slide {

struct SparseRowGradient {
  const std::int64_t* index;  // count row indices, in any order, repeats allowed
  const float* values;        // count x width, the value rows in the same order
  std::size_t count;
  std::size_t width;
};

// Steps weights (rows x width) and the optimizer's state arrays of the same shape, one pointer per
// state_names() entry, over the distinct rows of g. Returns how many distinct rows stepped.
// An index outside [0, rows) throws std::invalid_argument before anything moves.
std::size_t sparse_row_step(const OptimizerStep& step, float* weights, float* const* state, std::size_t states,
                            std::size_t rows, const SparseRowGradient& g, int threads);

}  // namespace slide
