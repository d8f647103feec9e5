#pragma once
// kiln::Error: every user-facing failure (bad shapes, dtypes, axes, devices, files, compiles).
// Subclasses carry the kind Python callers expect (IndexError, ValueError, ...); all stay kiln::Error.
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// An axis, dimension or index out of range.
class IndexError : public Error {
 public:
  using Error::Error;
};

// An argument of the right type with a bad value (negative size, too few repeats, ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

// An argument of the wrong kind (an unknown mode string, a dtype where none fits).
class TypeError : public Error {
 public:
  using Error::Error;
};

// A valid request kiln does not support.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

// Builds a message from streamable parts and throws it as E: throw_as<ValueError>("repeat: ", ...).
template <class E, class... Parts>
[[noreturn]] void throw_as(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw E(os.str());
}

// throw_error("reshape: expected ", n, " elements, got ", m).
template <class... Parts>
[[noreturn]] void throw_error(const Parts&... parts) {
  throw_as<Error>(parts...);
}

template <class... Parts>
[[noreturn]] void throw_index_error(const Parts&... parts) {
  throw_as<IndexError>(parts...);
}

template <class... Parts>
[[noreturn]] void throw_value_error(const Parts&... parts) {
  throw_as<ValueError>(parts...);
}

template <class... Parts>
[[noreturn]] void throw_type_error(const Parts&... parts) {
  throw_as<TypeError>(parts...);
}

template <class... Parts>
[[noreturn]] void throw_not_implemented(const Parts&... parts) {
  throw_as<NotImplementedError>(parts...);
}

}  // namespace kiln
