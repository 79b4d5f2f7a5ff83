#include "rerank/label_points.h"

#include <algorithm>
#include <vector>

namespace slide {

namespace {

// The row's distinct labels, ascending, each as label * 2 + (1 if the row has it): a label both
// shortlisted and owned, or listed twice, is one point.
void row_entries(const Shortlists& lists, std::int64_t row, std::vector<std::int64_t>& out) {
  out.clear();
  const std::int32_t* listed = lists.candidates + row * lists.width;
  for (int j = 0; j < lists.width; ++j)
    if (listed[j] >= 0) out.push_back(std::int64_t{listed[j]} * 2);
  for (std::int64_t j = lists.y->indptr[row]; j < lists.y->indptr[row + 1]; ++j)
    out.push_back(std::int64_t{lists.y->indices[j]} * 2 + 1);
  std::sort(out.begin(), out.end());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (kept && out[kept - 1] / 2 == out[i] / 2)
      out[kept - 1] = out[i];  // sorted: the owned copy (odd) comes last
    else
      out[kept++] = out[i];
  }
  out.resize(kept);
}

}  // namespace

void count_label_points(const Shortlists& lists, std::int64_t labels, std::int64_t* indptr) {
  std::fill(indptr, indptr + labels + 1, 0);
  std::vector<std::int64_t> entries;
  for (std::int64_t row = 0; row < lists.y->rows; ++row) {
    row_entries(lists, row, entries);
    for (const std::int64_t e : entries) ++indptr[e / 2 + 1];
  }
  for (std::int64_t l = 0; l < labels; ++l) indptr[l + 1] += indptr[l];
}

void fill_label_points(const Shortlists& lists, std::int64_t labels, const std::int64_t* indptr,
                       std::int64_t* rows, std::uint8_t* positive) {
  std::vector<std::int64_t> next(indptr, indptr + labels);
  std::vector<std::int64_t> entries;
  for (std::int64_t row = 0; row < lists.y->rows; ++row) {
    row_entries(lists, row, entries);
    for (const std::int64_t e : entries) {
      const std::int64_t at = next[static_cast<std::size_t>(e / 2)]++;
      rows[at] = row;
      positive[at] = static_cast<std::uint8_t>(e & 1);
    }
  }
}

}  // namespace slide
