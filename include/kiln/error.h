#pragma once
// kiln::Error: every user-facing failure (bad shapes, dtypes, axes, devices, files, compiles).
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Builds a message from streamable parts: throw_error("reshape: expected ", n, " elements, got ", m).
template <class... Parts>
[[noreturn]] void throw_error(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

}  // namespace kiln
