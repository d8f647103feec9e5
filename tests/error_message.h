#pragma once
// Helpers for tests of bad input: the message of the kiln::Error a callable throws, and how many
// mutations the parser fuzz tests run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <string>

#include "kiln/error.h"

namespace kt {

// The kiln::Error message `f` throws, or a test failure if it throws nothing or something else.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-kiln exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

// Mutations per parser fuzz test: `fallback` unless KILN_FUZZ_ITERATIONS asks for more (a longer
// run by hand under the sanitizer build: KILN_FUZZ_ITERATIONS=200000 ./test_safetensors).
inline int fuzz_iterations(int fallback) {
  const char* env = std::getenv("KILN_FUZZ_ITERATIONS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : fallback;
}

}  // namespace kt
