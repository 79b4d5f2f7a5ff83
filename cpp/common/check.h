// Checked errors. User-facing problems throw std::invalid_argument (pybind11 turns it into
// ValueError); broken internal invariants throw std::logic_error naming the source location.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace slide {

[[noreturn]] inline void throw_invalid(const std::string& what) { throw std::invalid_argument(what); }

[[noreturn]] inline void throw_internal(const char* file, int line, const char* cond) {
  std::ostringstream os;
  os << "slide internal error at " << file << ":" << line << ": " << cond;
  throw std::logic_error(os.str());
}

}  // namespace slide

// SLIDE_REQUIRE(cond, message-stream-expression): argument validation.
#define SLIDE_REQUIRE(cond, msg)                 \
  do {                                           \
    if (!(cond)) {                               \
      std::ostringstream slide_os_;              \
      slide_os_ << msg;                          \
      ::slide::throw_invalid(slide_os_.str());   \
    }                                            \
  } while (0)

#define SLIDE_ASSERT(cond)                                              \
  do {                                                                  \
    if (!(cond)) ::slide::throw_internal(__FILE__, __LINE__, #cond);    \
  } while (0)
