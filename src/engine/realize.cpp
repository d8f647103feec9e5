#include "engine/realize.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <map>
#include <tuple>
#include <unordered_map>

#include "codegen/codegen.h"
#include "engine/buffers.h"
#include "kiln/counters.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "runtime/device.h"
#include "support/env.h"

namespace kiln {

int64_t GlobalCounters::kernel_count = 0, GlobalCounters::global_ops = 0, GlobalCounters::global_mem = 0,
        GlobalCounters::mem_used = 0;
double GlobalCounters::time_sum_s = 0;
void GlobalCounters::reset() {
  kernel_count = global_ops = global_mem = 0;
  time_sum_s = 0;
}

namespace engine {
namespace {

struct CompiledKernel {
  codegen::Program program;
  std::unique_ptr<runtime::Program> runtime;
};

// Visible width of a string that may hold ANSI color codes.
size_t visible_length(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\033') {
      while (i < s.size() && s[i] != 'm') i++;
      continue;
    }
    n++;
  }
  return n;
}

std::string pad(const std::string& s, size_t width) {
  size_t n = visible_length(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}

class KernelCache {
 public:
  CompiledKernel& get(const UOpRef& ast, runtime::Device& dev) {
    std::lock_guard lock(mu_);
    const bool optimize = env::get_int("NOOPT", 0) == 0;
    auto key = std::make_tuple(ast.get(), dev.name(), optimize);
    if (auto it = cache_.find(key); it != cache_.end()) return *it->second.second;
    auto k = std::make_unique<CompiledKernel>();
    const int debug = env::debug_level();
    if (debug >= 5) fprintf(stderr, "%s", print_graph(ast).c_str());
    codegen::Target target{&renderer::c_renderer(), dev.max_threads(), optimize, dev.vector_bytes()};
    k->program = codegen::to_program(ast, target);
    if (debug >= 3) {
      fprintf(stderr, "%s opts:", k->program.display_name.c_str());
      for (const std::string& o : k->program.opts) fprintf(stderr, " %s", o.c_str());
      fprintf(stderr, "\n");
    }
    if (debug >= 6)
      for (const UOpRef& u : k->program.linear)
        fprintf(stderr, "  %-8s %-10s %s\n", std::string(op_name(u->op)).c_str(), u->dtype.name().c_str(),
                arg_to_string(u->arg).c_str());
    if (debug >= 4) fprintf(stderr, "%s\n", k->program.source.c_str());
    auto before = runtime::compile_stats();
    auto start = std::chrono::steady_clock::now();
    std::string binary = dev.compiler().compile(k->program.source);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (debug >= 2) {
      if (runtime::compile_stats().compiled > before.compiled)
        fprintf(stderr, "*** %-6s compile %s compiled in %.1f ms\n", dev.name().c_str(),
                pad(k->program.display_name, 30).c_str(), ms);
      else
        fprintf(stderr, "*** %-6s compile %s disk cache hit\n", dev.name().c_str(), pad(k->program.display_name, 30).c_str());
    }
    k->runtime = dev.load(binary, k->program.name);
    CompiledKernel& ref = *k;
    cache_.emplace(key, std::make_pair(ast, std::move(k)));
    return ref;
  }

 private:
  std::mutex mu_;
  // by (kernel AST, device, optimized?)
  std::map<std::tuple<const UOp*, std::string, bool>, std::pair<UOpRef, std::unique_ptr<CompiledKernel>>> cache_;
};

KernelCache& kernel_cache() {
  static KernelCache* c = new KernelCache();  // programs stay loaded until exit
  return *c;
}

}  // namespace

void run_linear(const UOpRef& linear) {
  const int debug = env::debug_level();
  for (const UOpRef& call : linear->src) {
    const UOpRef& ast = call->src[0];
    std::vector<void*> bufs;
    int64_t bytes = 0;
    for (size_t i = 1; i < call->src.size(); i++) {
      bufs.push_back(buffer_address(*call->src[i]));
      bytes += static_cast<int64_t>(buffer_bytes(*call->src[i]));
    }
    runtime::Device& dev = runtime::get_device(call->src[1]->arg_as<BufferArg>().device);
    CompiledKernel& k = kernel_cache().get(ast, dev);
    double seconds = k.runtime->launch(bufs, {}, k.program.threads, debug >= 2);
    GlobalCounters::kernel_count++;
    GlobalCounters::global_ops += static_cast<int64_t>(k.program.flops);
    GlobalCounters::global_mem += bytes;
    GlobalCounters::time_sum_s += seconds;
    if (debug >= 2)
      fprintf(stderr, "*** %-6s %4lld %s arg %2zu mem %6.2f GB tm %10.2fus/%10.2fms (%9.2f GFLOPS %7.1f GB/s)\n",
              dev.name().c_str(), (long long)GlobalCounters::kernel_count, pad(k.program.display_name, 30).c_str(),
              bufs.size(), GlobalCounters::mem_used / 1e9, seconds * 1e6, GlobalCounters::time_sum_s * 1e3,
              k.program.flops / seconds / 1e9, bytes / seconds / 1e9);
  }
}

schedule::Schedule realize(const std::vector<UOpRef>& roots) {
  auto start = std::chrono::steady_clock::now();
  schedule::Schedule s = schedule::create_schedule(roots);
  if (env::debug_level() >= 1 && !s.linear->src.empty())
    fprintf(stderr, "scheduled %zu kernels in %.2f ms\n", s.linear->src.size(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  run_linear(s.linear);
  return s;
}

}  // namespace engine
}  // namespace kiln
