#include "cuda_render_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <utility>

#include "codegen/codegen.h"
#include "engine/kernel_cache.h"
#include "kiln/error.h"
#include "renderer/renderer.h"
#include "runtime/cuda/cuda_compiler.h"
#include "runtime/cuda/cuda_program.h"
#include "support/env.h"

namespace kt {
namespace {

using namespace kiln;

// An A100's resident threads (108 multiprocessors x 2048): any count above 1 renders the same split
// of the THREAD axis a real GPU gets.
constexpr int kThreads = 108 * 2048;

codegen::Target cuda_target(bool optimize) {
  return {&renderer::cuda_renderer(), kThreads, optimize, 0, runtime::cuda::CudaProgram::kMaxBlockThreads,
          runtime::cuda::CudaProgram::kSharedMemoryBytes};
}

// Made on first use, which throws kiln::Error when NVRTC cannot be loaded (and is tried again then).
runtime::cuda::CudaCompiler& cuda_compiler() {
  static runtime::cuda::CudaCompiler compiler{runtime::cuda::target_arch("compute_80")};
  return compiler;
}

// CHECK_RENDER, read once before the first test: a language it names that cannot be checked fails
// the run before any test.
class CheckRenderFromEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    const char* language = std::getenv("CHECK_RENDER");
    if (language == nullptr || *language == '\0') return;
    try {
      check_render(language);
    } catch (const Error& e) {
      FAIL() << e.what();
    }
  }
};
[[maybe_unused]] testing::Environment* const environment = testing::AddGlobalTestEnvironment(new CheckRenderFromEnvironment);

}  // namespace

void check_render(const std::string& language) {
  if (language != "CUDA")
    throw_error("CHECK_RENDER=", language, ": expected CUDA (the language kiln checks without its device)");
  cuda_compiler();
  engine::set_kernel_check([](const UOpRef& ast, bool optimize) -> std::function<void()> {
    std::string source = codegen::to_program(ast, cuda_target(optimize)).source;
    if (env::debug_level() >= 4) fprintf(stderr, "CHECK_RENDER=CUDA:\n%s\n", source.c_str());
    return [source = std::move(source)] { cuda_compiler().compile(source); };
  });
}

void stop_check_render() { engine::set_kernel_check(nullptr); }

}  // namespace kt
