// libFuzzer target for the Extreme Classification parser: any input must either parse into
// consistent CSR arrays or raise ParseError with a line inside the file, and feeding it in pieces
// cut at line breaks must give exactly the same arrays or the same error; anything else (a
// crash, a sanitizer report, another exception, an inconsistent result) is a finding.
// Built and run by benches/fuzz_parsers.py.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

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

struct Outcome {
  bool ok = false;
  slide::XcData data;
  std::int64_t line = 0;
  std::string message;
};

// The whole input at once, or in pieces cut after every `stride`-th line break.
Outcome parse(const std::uint8_t* data, std::size_t size, int stride) {
  Outcome out;
  const char* text = reinterpret_cast<const char*>(data);
  try {
    if (stride == 0) {
      out.data = slide::parse_xc(text, size);
    } else {
      slide::XcStreamParser parser;
      std::size_t begin = 0;
      int breaks = 0;
      for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == '\n' && ++breaks % stride == 0) {
          parser.feed(text + begin, i + 1 - begin, false, out.data);
          begin = i + 1;
        }
      }
      parser.feed(text + begin, size - begin, true, out.data);
    }
    out.ok = true;
  } catch (const slide::ParseError& e) {
    out.line = e.line();
    out.message = e.what();
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Outcome whole = parse(data, size, 0);
  if (whole.ok) {
    check(whole.data);
  } else {
    // Line 0 (the whole file) is never used; the last line may be one past the end, where a
    // missing point was due.
    require(whole.line >= 1 && whole.line <= count_lines(data, size) + 1);
    require(!whole.message.empty());
  }
  const Outcome pieces = parse(data, size, size ? 1 + data[0] % 4 : 1);
  require(pieces.ok == whole.ok);
  if (whole.ok) {
    const slide::XcData &a = whole.data, &b = pieces.data;
    require(a.num_points == b.num_points && a.num_features == b.num_features && a.num_labels == b.num_labels);
    require(a.x_indptr == b.x_indptr && a.x_indices == b.x_indices && a.y_indptr == b.y_indptr &&
            a.y_indices == b.y_indices);
    require(a.x_data == b.x_data);  // finite, so == is exact
  } else {
    require(pieces.line == whole.line && pieces.message == whole.message);
  }
  return 0;
}
