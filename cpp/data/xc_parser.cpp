#include "data/xc_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

namespace slide {

namespace {

class Cursor {
 public:
  Cursor(const char* begin, const char* end, std::int64_t lines_before) : p_(begin), end_(end), line_(lines_before) {}

  bool at_end() const { return p_ >= end_; }
  const char* pos() const { return p_; }
  std::int64_t line() const { return line_; }

  // Returns [begin, end) of the next line without its "\n" or "\r\n".
  bool next_line(const char*& b, const char*& e) {
    if (p_ >= end_) return false;
    b = p_;
    const char* nl = static_cast<const char*>(std::memchr(p_, '\n', end_ - p_));
    e = nl ? nl : end_;
    p_ = nl ? nl + 1 : end_;
    if (e > b && e[-1] == '\r') --e;
    ++line_;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
  std::int64_t line_;
};

// from_chars reports a literal beyond double's range as out of range whether it is too large or
// too small (subnormals included). Which one: the decimal exponent of its first nonzero digit.
bool below_double_range(const char* p, const char* end) {
  if (p < end && *p == '-') ++p;
  long magnitude = 0;
  bool nonzero = false, point = false;
  for (; p < end && (std::isdigit(static_cast<unsigned char>(*p)) || *p == '.'); ++p) {
    if (*p == '.') {
      point = true;
    } else if (nonzero) {
      magnitude += point ? 0 : 1;
    } else if (*p != '0') {
      nonzero = true;
    } else if (point) {
      --magnitude;
    }
  }
  if (!nonzero) return true;
  long exponent = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    const bool negative = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+')) ++p;
    for (; p < end && std::isdigit(static_cast<unsigned char>(*p)); ++p)
      exponent = std::min(exponent * 10 + (*p - '0'), 100000L);  // anything this far out is decided
    if (negative) exponent = -exponent;
  }
  return magnitude + exponent < 0;
}

std::string show(const char* b, const char* e) {
  std::string s(b, std::min<std::size_t>(e - b, 24));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) c = '?';
  return "'" + s + (e - b > 24 ? "...'" : "'");
}

[[noreturn]] void fail(std::int64_t line, const std::string& msg) { throw ParseError(line, msg); }

template <class T>
const char* parse_int(const char* b, const char* e, T& out, std::int64_t line, const char* what) {
  auto r = std::from_chars(b, e, out);
  if (r.ec != std::errc() || r.ptr == b || *b == '-') {  // "-0" parses as 0 but is not an id
    const char* stop = b;
    while (stop < e && *stop != ' ' && *stop != ',' && *stop != ':' && *stop != '\t') ++stop;
    fail(line, std::string("expected ") + what + " (a non-negative integer), got " + show(b, stop == b ? e : stop));
  }
  return r.ptr;
}

// Whether an id already occurred on the current line, in O(1): a stamp per id (the line that last
// used it) when the id space is small enough to hold them, else a hash set of the line's ids.
// The header's counts may lie, so they never size an allocation beyond the stamp limit.
}  // namespace

class RepeatCheck {
 public:
  explicit RepeatCheck(std::int64_t ids) {
    if (ids <= kMaxStamped) stamps_.assign(static_cast<std::size_t>(ids), 0);
  }
  bool seen(std::int64_t id, std::int64_t line) {
    if (!stamps_.empty()) {
      if (stamps_[id] == line) return true;
      stamps_[id] = line;
      return false;
    }
    if (line != line_) {
      line_ = line;
      ids_.clear();
    }
    return !ids_.insert(id).second;
  }

 private:
  static constexpr std::int64_t kMaxStamped = std::int64_t{1} << 25;  // 256 MB of stamps at most
  std::vector<std::int64_t> stamps_;
  std::unordered_set<std::int64_t> ids_;
  std::int64_t line_ = -1;
};

namespace {

bool blank(const char* b, const char* e) {
  for (; b < e; ++b)
    if (*b != ' ' && *b != '\t') return false;
  return true;
}

}  // namespace

void XcStreamParser::feed(const char* text, std::size_t size, bool last, XcData& d) {
  Cursor cur(text, text + size, line_);
  const char *b, *e;
  if (!has_header_) {
    if (!cur.next_line(b, e) || blank(b, e))
      fail(1, "expected a header 'num_points num_features num_labels', got an empty line");
    read_header(b, e);
  }
  d.num_points = num_points_;
  d.num_features = num_features_;
  d.num_labels = num_labels_;
  // Reserve from the piece's size (a point takes at least two bytes; ~12 bytes per feature entry
  // is typical), never from the header, which may lie.
  const std::size_t max_points = std::min<std::size_t>(static_cast<std::size_t>(num_points_ - points_), size / 2 + 1);
  d.x_indptr.reserve(d.x_indptr.size() + max_points + 1);
  d.y_indptr.reserve(d.y_indptr.size() + max_points + 1);
  d.x_indices.reserve(d.x_indices.size() + size / 12);
  d.x_data.reserve(d.x_data.size() + size / 12);
  while (cur.next_line(b, e)) {
    const std::int64_t line = cur.line();
    if (b == e) {
      // An empty line is only fine at the very end of the file. (A line of spaces is a point with
      // neither labels nor features.)
      if (!first_trailing_blank_) first_trailing_blank_ = line;
      continue;
    }
    if (first_trailing_blank_) fail(first_trailing_blank_, "blank line in the middle of the data");
    if (points_ == num_points_)
      fail(line, "more points than the header's " + std::to_string(num_points_));
    read_point(b, e, line, d);
    ++points_;
  }
  line_ = cur.line();
  if (last && points_ != num_points_)  // reported at the line where the next point was due
    fail(points_ + 2, "the header promises " + std::to_string(num_points_) + " points but the file ends after " +
                          std::to_string(points_));
}

void XcStreamParser::read_header(const char* b, const char* e) {
  const char* p = b;
  std::int64_t vals[3];
  for (int i = 0; i < 3; ++i) {
    while (p < e && (*p == ' ' || *p == '\t')) ++p;
    p = parse_int(p, e, vals[i], 1, i == 0 ? "num_points" : i == 1 ? "num_features" : "num_labels");
  }
  while (p < e && (*p == ' ' || *p == '\t')) ++p;
  if (p != e) fail(1, "expected exactly three numbers in the header, found more: " + show(p, e));
  if (vals[0] < 0 || vals[1] <= 0 || vals[2] <= 0 || vals[1] > INT32_MAX || vals[2] > INT32_MAX)
    fail(1, "header counts out of range (points >= 0, 1 <= features, labels <= 2^31-1)");
  num_points_ = vals[0];
  num_features_ = vals[1];
  num_labels_ = vals[2];
  label_repeats_ = std::make_unique<RepeatCheck>(num_labels_);
  feature_repeats_ = std::make_unique<RepeatCheck>(num_features_);
  has_header_ = true;
}

void XcStreamParser::read_point(const char* b, const char* e, std::int64_t line, XcData& d) {
  const char* p = b;
  // Labels: "l1,l2,...", or nothing when the line starts with a space.
  if (*p != ' ' && *p != '\t') {
    while (true) {
      std::int64_t label;
      p = parse_int(p, e, label, line, "a label id");
      if (label >= num_labels_)
        fail(line, "label id " + std::to_string(label) + " is out of range [0, " + std::to_string(num_labels_) + ")");
      if (label_repeats_->seen(label, line)) fail(line, "label id " + std::to_string(label) + " is repeated");
      d.y_indices.push_back(static_cast<std::int32_t>(label));
      if (p < e && *p == ',') {
        ++p;
        continue;
      }
      break;
    }
    if (p < e && *p != ' ' && *p != '\t') fail(line, "expected ',' or a space after a label, got " + show(p, e));
  }
  // Features: "f:v" separated by spaces.
  while (true) {
    while (p < e && (*p == ' ' || *p == '\t')) ++p;
    if (p >= e) break;
    std::int64_t f;
    p = parse_int(p, e, f, line, "a feature id");
    if (p >= e || *p != ':') fail(line, "expected ':' after feature id " + std::to_string(f));
    ++p;
    // Parsed as double, then rounded: a value too small for float becomes 0 instead of an error.
    double v = 0.0;
    auto r = std::from_chars(p, e, v);
    if (r.ec == std::errc::result_out_of_range) {  // r.ptr is past the literal; beyond double's range
      if (!below_double_range(p, r.ptr))
        fail(line, "feature " + std::to_string(f) + " has a value that is not a finite float32");
      v = std::copysign(0.0, *p == '-' ? -1.0 : 1.0);
      r.ec = std::errc();
    }
    if (r.ec != std::errc() || r.ptr == p || (r.ptr < e && *r.ptr != ' ' && *r.ptr != '\t')) {
      const char* stop = p;
      while (stop < e && *stop != ' ' && *stop != '\t') ++stop;
      fail(line, "expected a number after '" + std::to_string(f) + ":', got " + show(p, stop));
    }
    if (!std::isfinite(static_cast<float>(v)))
      fail(line, "feature " + std::to_string(f) + " has a value that is not a finite float32");
    if (f >= num_features_)
      fail(line, "feature id " + std::to_string(f) + " is out of range [0, " + std::to_string(num_features_) + ")");
    if (feature_repeats_->seen(f, line)) fail(line, "feature id " + std::to_string(f) + " is repeated");
    p = r.ptr;
    d.x_indices.push_back(static_cast<std::int32_t>(f));
    d.x_data.push_back(static_cast<float>(v));
  }
  d.x_indptr.push_back(static_cast<std::int64_t>(d.x_indices.size()));
  d.y_indptr.push_back(static_cast<std::int64_t>(d.y_indices.size()));
}

XcStreamParser::XcStreamParser() = default;

XcStreamParser::XcStreamParser(std::int64_t num_points, std::int64_t num_features, std::int64_t num_labels,
                               std::int64_t lines_before, std::int64_t points_before)
    : has_header_(true),
      num_points_(num_points),
      num_features_(num_features),
      num_labels_(num_labels),
      line_(lines_before),
      points_(points_before),
      label_repeats_(std::make_unique<RepeatCheck>(num_labels)),
      feature_repeats_(std::make_unique<RepeatCheck>(num_features)) {
  if (num_points < 0 || num_features <= 0 || num_labels <= 0 || num_features > INT32_MAX || num_labels > INT32_MAX ||
      lines_before < 1 || points_before < 0)
    throw std::invalid_argument("XcStreamParser: counts out of range");
}
XcStreamParser::~XcStreamParser() = default;

void XcStreamParser::restart(std::int64_t lines_before, std::int64_t points_before) {
  if (!has_header_ || lines_before < line_ || points_before < 0)
    throw std::invalid_argument("XcStreamParser.restart: only forwards, and only once the header is known");
  line_ = lines_before;
  points_ = points_before;
  first_trailing_blank_ = 0;
}

XcData parse_xc(const char* text, std::size_t size) {
  XcStreamParser parser;
  XcData d;
  parser.feed(text, size, /*last=*/true, d);
  return d;
}

}  // namespace slide
