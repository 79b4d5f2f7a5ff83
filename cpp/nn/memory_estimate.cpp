#include "nn/memory_estimate.h"

#include <algorithm>

#include "common/aligned_array.h"
#include "nn/batch_workspace.h"

namespace slide {

namespace {

// Parameters' arrays: rows x padded cols floats for weight, gradient (unless `deferred_gradients`,
// nn/parameters.h) and each optimizer state array (+ a BF16 copy), the same per row for the bias,
// and one touched flag per row.
std::size_t parameter_bytes(std::size_t rows, std::size_t cols, const NetworkConfig& c, bool row_bias,
                            bool deferred_gradients = false) {
  const std::size_t n = rows * padded_stride(cols);
  const std::size_t copies = 2 + state_names(c.optimizer.kind).size();
  const std::size_t nb = row_bias ? rows : 0;
  const std::size_t row_copies = deferred_gradients ? copies - 1 : copies;
  return n * row_copies * sizeof(float) + (c.bf16_weights ? n * sizeof(bf16) : 0) + nb * copies * sizeof(float) + rows;
}

}  // namespace

MemoryEstimate estimate_memory(const NetworkConfig& c, std::size_t batch_size) {
  MemoryEstimate e;
  const std::size_t T = static_cast<std::size_t>(std::max(c.threads, 1));
  std::size_t prev = c.layers.empty() ? 0 : c.layers[0].size;
  e.parameters += parameter_bytes(c.input_dim, prev, c, false) + parameter_bytes(1, prev, c, false);
  for (std::size_t i = 1; i < c.layers.size(); ++i) {
    const LayerConfig& l = c.layers[i];
    const std::size_t n = l.size;
    const bool output = i + 1 == c.layers.size();
    // Deferred accumulators are counted out: training in one process never fills them. Gradients
    // asked for without a step, or an outside trainer's (slide.torch) batches summed before a
    // step, allocate them at their first batch: rows x padded width x 4 bytes more.
    e.parameters += parameter_bytes(n, prev, c, true, output && defers_output_gradients(c));
    if (l.sampled) {
      const std::size_t L = static_cast<std::size_t>(l.lsh.l);
      const std::size_t buckets = std::size_t{1} << effective_range_bits(l.lsh);
      // tables (ids + offsets), codes, order + insertion order, update counters
      e.lsh += L * n * 4 + L * (buckets + 1) * 4 + n * L * 4 + 2 * n * 4 + n;
      e.scratch += T * n * (4 + 2);  // each thread's active-set stamps and hit counts
      if (output) e.scratch += n;    // the batch's label marks
      // the shared set's stamps and positions, and each thread's hit counts
      if (output && l.lsh.batch_active > 0) e.scratch += n * (8 + 4 * T);
    }
    if (output && (!l.sampled || l.lsh.batch_active > 0)) {
      // The batch workspace: logits and their transpose for one chunk, the chunk's weights both ways
      // and its gradient, hidden activations and deltas.
      const std::size_t chunk = std::min<std::size_t>(l.sampled ? l.lsh.batch_active + batch_size * 8 : n, 8192);
      const std::size_t ldc = chunk_stride(chunk), ldh = padded_stride(prev);
      e.scratch += (2 * batch_size * ldc + 3 * chunk * ldh + ldc * (T + 1) + 2 * batch_size * ldh) * sizeof(float);
    }
    // The exact scan's copy of the output layer rounded to BF16 (train/inference.cpp), which the
    // network keeps once a scan (validation, prediction) has run where BF16 products are native;
    // counted wherever matmul is "bf16", so the estimate stays an upper bound on every CPU.
    if (output && c.bf16_matmul) e.scratch += n * padded_stride(prev) * sizeof(bf16);
    prev = n;
  }
  return e;
}

}  // namespace slide
