// libFuzzer target for the Extreme Classification parser: any input must either parse into
// consistent CSR arrays or raise ParseError with a line inside the file; anything else (a crash,
// a sanitizer report, another exception, an inconsistent result) is a finding.
// Built and run by benches/fuzz_parsers.py.
#include <cstdint>
#include <cstdlib>

#include "data/xc_parser.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void check(const slide::XcData& d) {
  require(d.num_features >= 1 && d.num_labels >= 1);
  require(static_cast<std::int64_t>(d.x_indptr.size()) == d.num_points + 1);
  require(static_cast<std::int64_t>(d.y_indptr.size()) == d.num_points + 1);
  require(d.x_indptr.front() == 0 && d.y_indptr.front() == 0);
  for (std::size_t i = 1; i < d.x_indptr.size(); ++i) {
    require(d.x_indptr[i - 1] <= d.x_indptr[i]);
    require(d.y_indptr[i - 1] <= d.y_indptr[i]);
  }
  require(d.x_indptr.back() == static_cast<std::int64_t>(d.x_indices.size()));
  require(d.x_indices.size() == d.x_data.size());
  require(d.y_indptr.back() == static_cast<std::int64_t>(d.y_indices.size()));
  for (std::int32_t f : d.x_indices) require(f >= 0 && f < d.num_features);
  for (std::int32_t l : d.y_indices) require(l >= 0 && l < d.num_labels);
  for (float v : d.x_data) require(v - v == 0.0f);  // finite
}

std::int64_t count_lines(const std::uint8_t* data, std::size_t size) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < size; ++i) n += data[i] == '\n';
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check(slide::parse_xc(reinterpret_cast<const char*>(data), size));
  } catch (const slide::ParseError& e) {
    // Line 0 (the whole file) is never used; the last line may be one past the end, where a
    // missing point was due.
    require(e.line() >= 1 && e.line() <= count_lines(data, size) + 1);
    require(e.what()[0] != '\0');
  }
  return 0;
}
