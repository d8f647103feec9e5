#pragma once
// For tests that a tensor graph is the same on every device: a device without SIMD vectors (as a GPU)
// that runs on the CPU's memory, compiler and programs, and a graph's structure without its buffers.
#include <kiln/device.h>
#include <kiln/kiln.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "kiln/ir/pattern_matcher.h"

namespace kt {

// vector_bytes() 0, everything else the CPU's.
class ScalarDevice final : public kiln::runtime::Device {
 public:
  explicit ScalarDevice(std::string name) : Device(std::move(name)) {}
  kiln::runtime::Allocator& allocator() override { return kiln::runtime::get_device("CPU").allocator(); }
  kiln::runtime::Compiler& compiler() override { return kiln::runtime::get_device("CPU").compiler(); }
  std::unique_ptr<kiln::runtime::Program> load(const std::string& binary, const std::string& function_name) override {
    return kiln::runtime::get_device("CPU").load(binary, function_name);
  }
};

// Registers a ScalarDevice as `name` (once per name per process) and returns the name.
inline std::string register_scalar_device(const std::string& name) {
  kiln::runtime::register_device(name, [name] { return std::make_unique<ScalarDevice>(name); }, -1);
  return name;
}

// `t`'s graph with its buffers replaced by numbered placeholders (no device): equal structures are
// then the same node.
inline kiln::UOpRef without_buffers(const kiln::Tensor& t) {
  using namespace kiln;
  std::unordered_map<const UOp*, UOpRef> placeholders;
  for (const UOp* u : t.uop()->toposort())
    if (u->op == Ops::BUFFER && !placeholders.count(u))
      placeholders[u] = UOp::make(Ops::BUFFER, u->dtype, {},
                                  BufferArg{-1 - int64_t(placeholders.size()), u->arg_as<BufferArg>().size, ""});
  return substitute(t.uop(), placeholders);
}

}  // namespace kt
