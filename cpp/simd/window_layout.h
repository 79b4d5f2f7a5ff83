// The layout the hashing kernels read: a hash family's windows (WTA windows, SimHash projections)
// each gather `width` coordinates of the input. Windows go in groups of 16 so that one vector
// register holds one entry of 16 windows: group g keeps window (16 g + lane)'s entry j at
// [g * width * 16 + j * 16 + lane]. The last group is padded with `pad` (a valid coordinate).
#pragma once
#include <cstddef>
#include <vector>

namespace slide {

constexpr std::size_t kWindowGroup = 16;

inline std::size_t window_groups(std::size_t windows) { return (windows + kWindowGroup - 1) / kWindowGroup; }

// `natural` holds windows x width entries, window after window.
template <class T>
std::vector<T> interleave_windows(const std::vector<T>& natural, std::size_t windows, std::size_t width, T pad) {
  std::vector<T> out(window_groups(windows) * kWindowGroup * width, pad);
  for (std::size_t h = 0; h < windows; ++h)
    for (std::size_t j = 0; j < width; ++j)
      out[(h / kWindowGroup) * width * kWindowGroup + j * kWindowGroup + h % kWindowGroup] = natural[h * width + j];
  return out;
}

}  // namespace slide
