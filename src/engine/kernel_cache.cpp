#include "engine/kernel_cache.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <unistd.h>

#include "engine/beam_search.h"
#include "kiln/ir/pattern_matcher.h"
#include "runtime/compiler.h"
#include "support/env.h"
#include "support/parallel.h"
#include "support/profile.h"
#include "uop/rewrite_trace.h"
#include "viz/run_log.h"

namespace kiln::engine {
namespace {

// Which PARAMs `ast` stores into.
std::vector<bool> written_params(const UOpRef& ast) {
  std::vector<bool> writes;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::STORE) continue;
    const UOp* target = u->src[0].get();
    while (target->op != Ops::PARAM && !target->src.empty()) target = target->src[0].get();
    if (target->op != Ops::PARAM) continue;
    size_t i = static_cast<size_t>(target->arg_as<int64_t>());
    if (writes.size() <= i) writes.resize(i + 1, false);
    writes[i] = true;
  }
  return writes;
}

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

  void set_check(KernelCheck check) {
    std::lock_guard lock(mu_);
    check_ = std::move(check);
  }

  void prepare(const std::vector<std::pair<UOpRef, runtime::Device*>>& kernels) {
    struct Pending {
      Key key;
      UOpRef ast;
      runtime::Device* dev;
      std::unique_ptr<CompiledKernel> kernel;
      std::string binary;
      std::function<void()> check_compile;  // the kernel check's, when one is set
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
        todo.push_back({key, ast, dev, generate(ast, *dev, std::get<2>(key)), {}, {}, 0, false, nullptr});
        if (check_) todo.back().check_compile = check_(ast, std::get<2>(key) >= 0);
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
        if (p.check_compile) p.check_compile();
      } catch (...) {
        p.error = std::current_exception();
      }
    };
    support::parallel_for(todo.size(), [&](size_t i) { compile(todo[i]); });
    std::lock_guard lock(mu_);
    for (Pending& p : todo) {
      if (p.error) std::rethrow_exception(p.error);
      if (env::debug_level() >= 2) {
        const std::string name = pad(debug_name(p.kernel->program), 30);
        if (p.compiled) fprintf(stderr, "*** %-6s compile %s compiled in %.1f ms\n", p.dev->name().c_str(), name.c_str(), p.ms);
        else fprintf(stderr, "*** %-6s compile %s disk cache hit\n", p.dev->name().c_str(), name.c_str());
      }
      p.kernel->runtime = runtime::load_compiled(*p.dev, p.binary, p.kernel->program.source, p.kernel->program.name);
      cache_.emplace(p.key, std::make_pair(p.ast, std::move(p.kernel)));
    }
  }

 private:
  // (kernel, device, opt level: -1 with NOOPT=1, else BEAM's width, 0 for the hand-written rules)
  using Key = std::tuple<const UOp*, std::string, int64_t>;

  static Key key_of(const UOpRef& ast, runtime::Device& dev) {
    return {ast.get(), dev.name(), env::get_int("NOOPT", 0) != 0 ? -1 : env::get_int("BEAM", 0)};
  }

  // Codegen for one kernel, printing its stages at DEBUG 3-6.
  static std::unique_ptr<CompiledKernel> generate(const UOpRef& ast, runtime::Device& dev, int64_t opt_level) {
    profile::Scope timed("codegen", [&] { return kernel_name(ast); });
    static std::atomic<int64_t> generated{0};  // numbers the contexts: kernels may share a name
    trace::Context viz_context([&] { return "kernel " + std::to_string(++generated) + " " + kernel_name(ast); });
    auto k = std::make_unique<CompiledKernel>();
    engine_stats().kernels_generated++;
    k->writes = written_params(ast);
    const int debug = env::debug_level();
    if (debug >= 5) fprintf(stderr, "%s", print_graph(ast).c_str());
    // LOCALS=0: no work-group opts, as on devices without work-groups; LOCALS=1: the hand-written
    // rules use them wherever the device has them (unset: where it prefers them)
    const int64_t locals = env::get_int("LOCALS", -1);
    const codegen::Target target{.renderer = &renderer::renderer_for(dev.language()),
                                 .max_threads = dev.max_threads(),
                                 .optimize = opt_level >= 0,
                                 .vector_bytes = dev.vector_bytes(),
                                 .max_local_size = locals == 0 ? 0 : dev.max_local_size(),
                                 .local_memory_bytes = dev.local_memory_bytes(),
                                 .prefer_work_groups = locals == 1 || (locals != 0 && dev.prefers_work_groups()),
                                 .vector_registers = dev.vector_registers(),
                                 .cache_bytes = dev.last_level_cache_bytes(),
                                 .l2_cache_bytes = dev.l2_cache_bytes()};
    std::optional<std::vector<codegen::Opt>> opts;
    if (opt_level > 0) opts = beam_search(ast, dev, target, static_cast<int>(opt_level));
    k->program = codegen::to_program(ast, target, opts);
    if (debug >= 3) {
      fprintf(stderr, "%s opts:", debug_name(k->program).c_str());
      for (const codegen::Opt& o : k->program.opts) fprintf(stderr, " %s", o.str().c_str());
      const auto &g = k->program.global_size, &l = k->program.local_size;
      if (l[0] * l[1] * l[2] > 1)
        fprintf(stderr, " launch global [%lld, %lld, %lld] local [%lld, %lld, %lld]", (long long)g[0], (long long)g[1],
                (long long)g[2], (long long)l[0], (long long)l[1], (long long)l[2]);
      fprintf(stderr, "\n");
    }
    if (debug >= 6)
      for (const UOpRef& u : k->program.linear)
        fprintf(stderr, "  %-8s %-10s %s\n", std::string(op_name(u->op)).c_str(), u->dtype.name().c_str(),
                arg_to_string(u->arg).c_str());
    if (debug >= 4) fprintf(stderr, "%s\n", k->program.source.c_str());
    if (trace::enabled()) {
      std::vector<std::string> opts;
      for (const codegen::Opt& o : k->program.opts) opts.push_back(o.str());
      k->viz_id = viz::record_kernel({k->program.name, trace::current_context(), k->program.source, opts});
    }
    return k;
  }

  std::mutex mu_;
  std::map<Key, std::pair<UOpRef, std::unique_ptr<CompiledKernel>>> cache_;
  KernelCheck check_;
};

KernelCache& kernel_cache() {
  static KernelCache* c = new KernelCache();  // programs stay loaded until exit
  return *c;
}

}  // namespace

std::string pad(const std::string& s, size_t width) {
  size_t n = visible_length(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}

const std::string& debug_name(const codegen::Program& p) {
  static const bool terminal = isatty(fileno(stderr)) != 0;
  return terminal ? p.display_name : p.name;
}

void prepare_kernels(const std::vector<std::pair<UOpRef, runtime::Device*>>& kernels) { kernel_cache().prepare(kernels); }

CompiledKernel& compiled_kernel(const UOpRef& ast, runtime::Device& dev) { return kernel_cache().get(ast, dev); }

void set_kernel_check(KernelCheck check) { kernel_cache().set_check(std::move(check)); }

EngineStats& engine_stats() {
  static EngineStats s;
  return s;
}


}  // namespace kiln::engine
