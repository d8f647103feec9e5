#pragma once
// The message of the kiln::Error a callable throws, for tests that check what an error says.
#include <gtest/gtest.h>

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

}  // namespace kt
