// What training needs from a communicator when several processes (ranks) train one network: the
// output layer split by rows across the ranks, everything below it replicated. The engine never
// talks to MPI itself; the Python layer implements this over mpi4py (slide/distributed/), so a
// build without MPI is the same build.
//
// Every method is collective: all ranks call it, in the same order, or none does. Sums are
// bit-identical on every rank (each block is added up on one rank, in rank order, and then copied
// to the others), so replicated parameters never drift apart.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace slide {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place: element i becomes the sum (max) over ranks of element i.
  virtual void sum(float* data, std::size_t n) = 0;
  virtual void sum(double* data, std::size_t n) = 0;
  virtual void max(float* data, std::size_t n) = 0;
  // Rank r receives the sum over ranks of data[offset_r, offset_r + counts[r]) into out, where
  // the offsets are the running sums of counts (reduce-scatter).
  virtual void sum_scatter(const float* data, const std::vector<std::size_t>& counts, float* out) = 0;
  // Every rank's `bytes` bytes, concatenated in rank order into out; counts[r] = rank r's bytes.
  virtual void gather(const void* data, std::size_t bytes, std::vector<std::uint8_t>& out,
                      std::vector<std::size_t>& counts) = 0;
};

// Which rows of the global output layer this rank holds: [offset, offset + rows) of `total`.
// Ranks hold contiguous blocks, rank r the r-th of `ranks` near-equal parts.
struct OutputShard {
  std::uint32_t offset = 0;
  std::uint32_t total = 0;  // 0: unsharded, the layer is all of it
};

}  // namespace slide
