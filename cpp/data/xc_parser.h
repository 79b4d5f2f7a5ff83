// Parser of Extreme Classification Repository text files into CSR arrays:
//   header:  num_points num_features num_labels
//   point:   l1,l2,...,lk f1:v1 f2:v2 ...      (0-based ids; an empty label field starts with a space)
// Every problem is reported with its 1-based line number and what was expected; CRLF endings and
// trailing empty lines are accepted; a line of only spaces is a point without labels or features. Single pass, no allocation per line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
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

class RepeatCheck;

// The same format fed in pieces, so a file of any size is read with bounded memory: the header
// comes from the first piece, and line numbers, the repeat and range checks and the header's
// point count span the pieces. Each piece must end at a line break, except the last.
class XcStreamParser {
 public:
  XcStreamParser();
  // A parser for a piece in the middle of a file whose header is known: `lines_before` lines
  // precede the piece (header included) and `points_before` points. Pieces parsed by several such
  // parsers at once give what one parser fed them in order gives.
  XcStreamParser(std::int64_t num_points, std::int64_t num_features, std::int64_t num_labels,
                 std::int64_t lines_before, std::int64_t points_before);
  ~XcStreamParser();
  // Go on at another piece of the same file (a mid-file parser only): the repeat checks key on
  // line numbers, so their memory is reused as it is.
  void restart(std::int64_t lines_before, std::int64_t points_before);
  // Appends the piece's points to `out` (CSR offsets continue from out's) and sets its header
  // counts. `last`: the file ends here, so the header's point count is checked.
  void feed(const char* text, std::size_t size, bool last, XcData& out);
  bool has_header() const { return has_header_; }
  std::int64_t points_read() const { return points_; }
  std::int64_t lines_read() const { return line_; }
  // The first of the blank lines that end what was fed so far (0: it does not end in one): an
  // error if any point follows.
  std::int64_t first_trailing_blank() const { return first_trailing_blank_; }

 private:
  void read_header(const char* b, const char* e);
  void read_point(const char* b, const char* e, std::int64_t line, XcData& d);

  bool has_header_ = false;
  std::int64_t num_points_ = 0, num_features_ = 0, num_labels_ = 0;
  std::int64_t line_ = 0, points_ = 0, first_trailing_blank_ = 0;
  std::unique_ptr<RepeatCheck> label_repeats_, feature_repeats_;
};

XcData parse_xc(const char* text, std::size_t size);

}  // namespace slide
