#pragma once
// Math functions the C language defines in the kernel itself instead of calling libm (c_math.cpp).
#include <optional>
#include <string>

namespace kiln::renderer {

// The name of the kernel's own function for math function `f` ("exp", ...) on `float_type`
// (float32 lanes: "float" or a vector type such as "float_x16"), or nothing when libm's is used.
std::optional<std::string> c_inline_math_name(const std::string& f, const std::string& float_type);
// That function's definition, printed once before the kernel.
std::string c_inline_math_definition(const std::string& f, const std::string& float_type, bool vector);

}  // namespace kiln::renderer
