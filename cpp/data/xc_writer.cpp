#include "data/xc_writer.h"

#include <charconv>

namespace slide {

std::string format_xc_points(std::int64_t rows, const std::int64_t* x_indptr, const std::int32_t* x_indices,
                             const float* x_data, const std::int64_t* y_indptr, const std::int32_t* y_indices) {
  std::string out;
  out.reserve(static_cast<std::size_t>(rows) * 2 + static_cast<std::size_t>(x_indptr[rows] - x_indptr[0]) * 20 +
              static_cast<std::size_t>(y_indptr[rows] - y_indptr[0]) * 8);
  char buf[64];
  auto put = [&](auto value) {
    auto r = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, r.ptr);
  };
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = y_indptr[i]; j < y_indptr[i + 1]; ++j) {
      if (j > y_indptr[i]) out.push_back(',');
      put(y_indices[j]);
    }
    for (std::int64_t j = x_indptr[i]; j < x_indptr[i + 1]; ++j) {
      out.push_back(' ');
      put(x_indices[j]);
      out.push_back(':');
      put(x_data[j]);
    }
    if (y_indptr[i] == y_indptr[i + 1] && x_indptr[i] == x_indptr[i + 1]) out.push_back(' ');
    out.push_back('\n');
  }
  return out;
}

}  // namespace slide
