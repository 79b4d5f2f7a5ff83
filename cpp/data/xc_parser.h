// Parser of Extreme Classification Repository text files into CSR arrays:
//   header:  num_points num_features num_labels
//   point:   l1,l2,...,lk f1:v1 f2:v2 ...      (0-based ids; an empty label field starts with a space)
// Every problem is reported with its 1-based line number and what was expected; CRLF endings and
// trailing empty lines are accepted; a line of only spaces is a point without labels or features. Single pass, no allocation per line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace slide {

struct XcData {
  std::int64_t num_points = 0, num_features = 0, num_labels = 0;
  std::vector<std::int64_t> x_indptr{0};
  std::vector<std::int32_t> x_indices;
  std::vector<float> x_data;
  std::vector<std::int64_t> y_indptr{0};
  std::vector<std::int32_t> y_indices;
};

// A malformed file: line is 1-based (0 = the file as a whole).
class ParseError : public std::runtime_error {
 public:
  ParseError(std::int64_t line, const std::string& what) : std::runtime_error(what), line_(line) {}
  std::int64_t line() const { return line_; }

 private:
  std::int64_t line_;
};

XcData parse_xc(const char* text, std::size_t size);

}  // namespace slide
