// Writer of Extreme Classification Repository text (the points, without the header): the inverse
// of the parser, with each value in the shortest form that reads back as the same float32.
#pragma once
#include <cstdint>
#include <string>

namespace slide {

std::string format_xc_points(std::int64_t rows, const std::int64_t* x_indptr, const std::int32_t* x_indices,
                             const float* x_data, const std::int64_t* y_indptr, const std::int32_t* y_indices);

}  // namespace slide
