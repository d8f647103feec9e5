#pragma once
// Checks of beautiful_mnist's numeric flags. CLI11's own conversions accept too much: "-1" for an
// unsigned option wraps to 2^64-1, a huge integer saturates, "nan" passes PositiveNumber, and its
// range messages print the largest double in all its 309 digits. These refuse such values with a
// short message quoting (a shortened) what was given.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace mnist {

// Counts (epochs, steps, images) stay below this, so their products cannot overflow int64.
inline constexpr uint64_t kMaxCount = 1'000'000'000;

inline std::string shortened(const std::string& text) {
  return text.size() > 24 ? text.substr(0, 21) + "..." : text;
}

// A whole number in [min, max], in decimal digits.
inline CLI::Validator whole_number(uint64_t min, uint64_t max) {
  std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end || value < min || value > max)
          return "expected a whole number " + range + ", got " + shortened(text);
        return "";
      },
      std::to_string(min) + ".." + std::to_string(max));
}

// A finite number above 0.
inline CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value) || value <= 0)
          return "expected a finite number above 0, got " + shortened(text);
        return "";
      },
      "POSITIVE");
}

}  // namespace mnist
