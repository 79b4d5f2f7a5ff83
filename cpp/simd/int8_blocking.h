// The int8 scan's walk over output rows and samples (Kernels::int8_scores): tiles of R rows by 4
// samples, the edges in smaller tiles. Each level brings its own register tile,
// Tile<rows, samples>::run(depth, w, h, out, ldo), so what is compiled for one ISA never serves
// another (the files are built apart, outside link-time optimisation).
#pragma once
#include <cstddef>
#include <cstdint>

namespace slide::int8_blocking {

template <template <int, int> class Tile, int R>
inline void row_tile(std::size_t samples, std::size_t depth, const std::int8_t* w, const std::uint8_t* h,
                     std::int32_t* out, std::size_t ldo) {
  std::size_t b = 0;
  for (; b + 4 <= samples; b += 4) Tile<R, 4>::run(depth, w, h + b * depth, out + b, ldo);
  switch (samples - b) {
    case 3: Tile<R, 3>::run(depth, w, h + b * depth, out + b, ldo); break;
    case 2: Tile<R, 2>::run(depth, w, h + b * depth, out + b, ldo); break;
    case 1: Tile<R, 1>::run(depth, w, h + b * depth, out + b, ldo); break;
    default: break;
  }
}

// Rows in tiles of R, then what is left in tiles of R - 1, ... down to 1.
template <template <int, int> class Tile, int R>
inline void scores(std::size_t rows, std::size_t samples, std::size_t depth, const std::int8_t* w,
                   const std::uint8_t* h, std::int32_t* out, std::size_t ldo) {
  std::size_t i = 0;
  for (; i + R <= rows; i += R) row_tile<Tile, R>(samples, depth, w + i * depth, h, out + i * ldo, ldo);
  if constexpr (R > 1) {
    if (i < rows) scores<Tile, R - 1>(rows - i, samples, depth, w + i * depth, h, out + i * ldo, ldo);
  }
}

}  // namespace slide::int8_blocking
