#include "distributed/replica_sync.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace slide {

namespace {

void sum_dense(Parameters& p, Collective& comm) {
  comm.sum(p.grad.data(), static_cast<std::size_t>(p.rows) * p.stride);
  if (p.row_bias) comm.sum(p.bias_grad.data(), p.rows);
}

// The rows with gradient on this rank, sorted.
std::vector<std::uint32_t> touched_rows(Network& net) {
  std::vector<std::uint32_t> rows;
  for (int t = 0; t < net.threads(); ++t) {
    const std::vector<std::uint32_t>& l = net.state(t).input_touched;
    rows.insert(rows.end(), l.begin(), l.end());
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::vector<std::uint32_t> words(const std::vector<std::uint8_t>& bytes, std::size_t at, std::size_t n) {
  std::vector<std::uint32_t> out(n / sizeof(std::uint32_t));
  if (n) std::memcpy(out.data(), bytes.data() + at, n);  // an empty vector's data() may be null
  return out;
}

}  // namespace

ExchangeStats sum_replicated_gradients(Network& net, Collective& comm, SparseExchange how) {
  Parameters& table = net.input.table;
  const std::size_t width = table.cols;
  const std::vector<std::uint32_t> mine = touched_rows(net);

  std::vector<std::uint8_t> gathered;
  std::vector<std::size_t> counts;
  comm.gather(mine.data(), mine.size() * sizeof(std::uint32_t), gathered, counts);
  std::vector<std::vector<std::uint32_t>> rows_of(counts.size());
  ExchangeStats stats;
  std::vector<std::uint32_t> all;
  for (std::size_t r = 0, at = 0; r < counts.size(); at += counts[r], ++r) {
    rows_of[r] = words(gathered, at, counts[r]);
    all.insert(all.end(), rows_of[r].begin(), rows_of[r].end());
  }
  stats.rows = static_cast<std::int64_t>(all.size());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  stats.union_rows = static_cast<std::int64_t>(all.size());
  stats.allreduce = how == SparseExchange::kAllreduce ||
                    (how == SparseExchange::kAuto && allreduce_pays(stats.rows, stats.union_rows));

  if (stats.allreduce) {
    std::vector<float> block(all.size() * width, 0.0f);
    for (std::size_t i = 0, m = 0; i < all.size() && m < mine.size(); ++i)
      if (all[i] == mine[m]) std::memcpy(&block[i * width], table.grad_row(mine[m++]), width * sizeof(float));
    comm.sum(block.data(), block.size());
    for (std::size_t i = 0; i < all.size(); ++i) std::memcpy(table.grad_row(all[i]), &block[i * width], width * sizeof(float));
  } else {
    std::vector<float> values(mine.size() * width);
    for (std::size_t m = 0; m < mine.size(); ++m)
      std::memcpy(&values[m * width], table.grad_row(mine[m]), width * sizeof(float));
    comm.gather(values.data(), values.size() * sizeof(float), gathered, counts);
    // Added up in rank order from zero on every rank, this rank's own part included, so every
    // replica gets the same bits. Rows nobody touched hold zero gradient between steps.
    for (std::uint32_t row : mine) std::fill(table.grad_row(row), table.grad_row(row) + width, 0.0f);
    for (std::size_t r = 0, at = 0; r < counts.size(); at += counts[r], ++r) {
      const float* part = reinterpret_cast<const float*>(gathered.data() + at);
      for (std::size_t i = 0; i < rows_of[r].size(); ++i) {
        float* g = table.grad_row(rows_of[r][i]);  // zero unless an earlier rank's part is in
        const float* v = part + i * width;
        for (std::size_t q = 0; q < width; ++q) g[q] += v[q];
      }
    }
  }
  // Rows another rank touched are this rank's to update too.
  std::vector<std::uint32_t>& first = net.state(0).input_touched;
  for (std::uint32_t row : all)
    if (table.claim(row)) first.push_back(row);

  sum_dense(net.input.bias, comm);
  for (std::size_t i = 0; i + 1 < net.layers.size(); ++i) sum_dense(net.layers[i].params, comm);
  return stats;
}

}  // namespace slide
