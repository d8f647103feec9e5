#pragma once
// Math functions the C language defines in the kernel itself instead of calling libm (c_math.cpp).
#include <optional>
#include <string>

namespace kiln::renderer {

struct CMathFunction {
  std::string name;        // what the kernel calls
  std::string definition;  // printed once before the kernel
};

// The inline definition of math function `f` ("exp", ...) on `float_type` (float32 lanes: "float"
// or a vector type such as "float_x16"), or nothing when libm's function is used.
std::optional<CMathFunction> c_inline_math(const std::string& f, const std::string& float_type, bool vector);

}  // namespace kiln::renderer
