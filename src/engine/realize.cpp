#include "engine/realize.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <atomic>
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
#include "support/profile.h"
#include "uop/rewrite_trace.h"
#include "viz/at_exit.h"
#include "viz/run_log.h"

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
  int64_t viz_id = -1;  // its source in the VIZ log
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

// Compiled programs by (kernel AST, device, optimized?). The kernels a schedule still lacks are
// generated one after the other, then compiled by parallel compiler processes: a cold training step
// compiles a hundred kernels.
class KernelCache {
 public:
  // A kernel prepare() made ready (the dispatch path: one lookup).
  CompiledKernel& get(const UOpRef& ast, runtime::Device& dev) {
    std::lock_guard lock(mu_);
    return *cache_.at(key_of(ast, dev)).second;
  }

  void prepare(const std::vector<std::pair<UOpRef, runtime::Device*>>& kernels) {
    struct Pending {
      Key key;
      UOpRef ast;
      runtime::Device* dev;
      std::unique_ptr<CompiledKernel> kernel;
      std::string binary;
      double ms = 0;
      bool compiled = false;
      std::exception_ptr error;
    };
    std::vector<Pending> todo;
    {
      std::lock_guard lock(mu_);
      std::set<Key> queued;
      for (const auto& [ast, dev] : kernels) {
        Key key = key_of(ast, *dev);
        if (cache_.count(key) || !queued.insert(key).second) continue;
        todo.push_back({key, ast, dev, generate(ast, *dev, std::get<2>(key)), {}, 0, false, nullptr});
      }
    }
    if (todo.empty()) return;
    auto compile = [](Pending& p) {
      profile::Scope timed("compile", p.kernel->program.name);
      try {
        auto before = runtime::compile_stats().compiled.load();
        auto start = std::chrono::steady_clock::now();
        p.binary = p.dev->compiler().compile(p.kernel->program.source);
        p.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        p.compiled = runtime::compile_stats().compiled.load() > before;
      } catch (...) {
        p.error = std::current_exception();
      }
    };
    const size_t workers = std::min<size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    for (size_t w = 1; w < workers; w++)
      threads.emplace_back([&] {
        profile::name_thread("kiln compile");
        for (size_t i; (i = next++) < todo.size();) compile(todo[i]);
      });
    for (size_t i; (i = next++) < todo.size();) compile(todo[i]);
    for (std::thread& t : threads) t.join();
    std::lock_guard lock(mu_);
    for (Pending& p : todo) {
      if (p.error) std::rethrow_exception(p.error);
      if (env::debug_level() >= 2) {
        const std::string name = pad(p.kernel->program.display_name, 30);
        if (p.compiled) fprintf(stderr, "*** %-6s compile %s compiled in %.1f ms\n", p.dev->name().c_str(), name.c_str(), p.ms);
        else fprintf(stderr, "*** %-6s compile %s disk cache hit\n", p.dev->name().c_str(), name.c_str());
      }
      p.kernel->runtime = p.dev->load(p.binary, p.kernel->program.name);
      cache_.emplace(p.key, std::make_pair(p.ast, std::move(p.kernel)));
    }
  }

 private:
  using Key = std::tuple<const UOp*, std::string, bool>;

  static Key key_of(const UOpRef& ast, runtime::Device& dev) {
    return {ast.get(), dev.name(), env::get_int("NOOPT", 0) == 0};
  }

  // Codegen for one kernel, printing its stages at DEBUG 3-6.
  static std::unique_ptr<CompiledKernel> generate(const UOpRef& ast, runtime::Device& dev, bool optimize) {
    profile::Scope timed("codegen", [&] { return kernel_name(ast); });
    static std::atomic<int64_t> generated{0};  // numbers the contexts: kernels may share a name
    trace::Context viz_context([&] { return "kernel " + std::to_string(++generated) + " " + kernel_name(ast); });
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
    if (trace::enabled())
      k->viz_id = viz::record_kernel({k->program.name, trace::current_context(), k->program.source, k->program.opts});
    return k;
  }

  std::mutex mu_;
  std::map<Key, std::pair<UOpRef, std::unique_ptr<CompiledKernel>>> cache_;
};

// A CALL's buffers as the VIZ schedule shows them.
std::vector<viz::BufferUse> viz_buffers(const UOpRef& call) {
  std::vector<viz::BufferUse> out;
  for (size_t i = 1; i < call->src.size(); i++) {
    const BufferArg& b = call->src[i]->arg_as<BufferArg>();
    out.push_back({b.id, call->src[i]->dtype.name(), b.size, b.device});
  }
  return out;
}

KernelCache& kernel_cache() {
  static KernelCache* c = new KernelCache();  // programs stay loaded until exit
  return *c;
}

}  // namespace

void run_linear(const UOpRef& linear) {
  const int debug = env::debug_level();
  std::vector<std::pair<UOpRef, runtime::Device*>> kernels;
  for (const UOpRef& call : linear->src)
    kernels.push_back({call->src[0], &runtime::get_device(call->src[1]->arg_as<BufferArg>().device)});
  kernel_cache().prepare(kernels);
  viz::ScheduleRun viz_run;
  if (trace::enabled()) viz_run.context = trace::current_context();
  for (size_t c = 0; c < kernels.size(); c++) {
    const UOpRef& call = linear->src[c];
    const UOpRef& ast = call->src[0];
    std::vector<void*> bufs;
    int64_t bytes = 0;
    for (size_t i = 1; i < call->src.size(); i++) {
      bufs.push_back(buffer_address(*call->src[i]));
      bytes += static_cast<int64_t>(buffer_bytes(*call->src[i]));
    }
    runtime::Device& dev = *kernels[c].second;
    CompiledKernel& k = kernel_cache().get(ast, dev);
    double seconds;
    {
      profile::Scope timed("launch", k.program.name, bytes);
      seconds = k.runtime->launch(bufs, {}, k.program.threads, debug >= 2);
    }
    if (trace::enabled()) viz_run.launches.push_back({k.program.name, k.viz_id, viz_buffers(call), seconds});
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
  if (trace::enabled() && !viz_run.launches.empty()) viz::record_schedule(std::move(viz_run));
}

schedule::Schedule realize(const std::vector<UOpRef>& roots) {
  viz::install_exit_hook();
  static std::atomic<int64_t> realizes{0};
  trace::Context viz_context([&] { return "schedule " + std::to_string(++realizes); });
  auto start = std::chrono::steady_clock::now();
  schedule::Schedule s = [&] {
    profile::Scope timed("schedule", "schedule");
    return schedule::create_schedule(roots);
  }();
  if (env::debug_level() >= 1 && !s.linear->src.empty())
    fprintf(stderr, "scheduled %zu kernels in %.2f ms\n", s.linear->src.size(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  run_linear(s.linear);
  return s;
}

}  // namespace engine
}  // namespace kiln
