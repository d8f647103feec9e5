#include "engine/beam_search.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <set>

#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "runtime/compiler.h"
#include "runtime/disk_cache.h"
#include "support/env.h"
#include "support/hash.h"
#include "support/parallel.h"

namespace kiln::engine {
namespace {

namespace fs = std::filesystem;
using codegen::Opt;

// Rounds end when the best kernel gains less than this fraction, or after kMaxRounds.
constexpr double kMinProgress = 0.01;
constexpr int kMaxRounds = 8;
// Launches timed per candidate after its first; a candidate whose first launch is already this much
// slower than the best is not run again.
constexpr int kTimedRuns = 3;
constexpr double kHopeless = 3.0;
// Alternating timings of the search's winner and its start (see confirm).
constexpr int kConfirmRounds = 3;
// Bumped when the search or the opts change meaning: older cache entries are then never read.
constexpr const char* kCacheVersion = "beam-2";

// Elements of each PARAM the kernel reaches: one past the largest index of an INDEX into it.
std::vector<std::pair<DType, int64_t>> param_extents(const UOpRef& ast) {
  std::vector<std::pair<DType, int64_t>> out;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::INDEX || u->src[0]->op != Ops::PARAM) continue;
    const size_t i = static_cast<size_t>(u->src[0]->arg_as<int64_t>());
    if (out.size() <= i) out.resize(i + 1, {dtypes::uint8, 0});
    out[i].first = DType(u->src[0]->dtype.scalar);
    out[i].second = std::max(out[i].second, static_cast<int64_t>(u->src[1]->vmax()) + 1);
  }
  return out;
}

// Plausible contents for timing: floats in [0.5, 1.5) (zeros would take fast paths through
// transcendental functions), half floats 1, integers 1..7 (never a divisor of 0), alternating bools.
std::vector<unsigned char> sample_data(DType dtype, size_t elements) {
  const size_t item = static_cast<size_t>(dtype.itemsize());
  std::vector<unsigned char> out(elements * item, 0);
  for (size_t i = 0; i < elements; i++) {
    unsigned char* p = out.data() + i * item;
    const double x = 0.5 + static_cast<double>((i * 2654435761u) % 1000) / 1000.0;
    if (dtype.scalar == ScalarType::Float32) {
      const float f = static_cast<float>(x);
      std::memcpy(p, &f, sizeof f);
    } else if (dtype.scalar == ScalarType::Float64) {
      std::memcpy(p, &x, sizeof x);
    } else if (dtype.scalar == ScalarType::Float16 || dtype.scalar == ScalarType::BFloat16) {
      const uint16_t one = dtype.scalar == ScalarType::Float16 ? 0x3C00 : 0x3F80;
      std::memcpy(p, &one, sizeof one);
    } else {
      p[0] = static_cast<unsigned char>(dtype.is_bool() ? i % 2 : 1 + i % 7);  // little-endian
    }
  }
  return out;
}

struct Timed {
  std::vector<Opt> opts;
  double seconds;
};

std::string cache_key(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target, int width) {
  return runtime::content_hash(std::string(kCacheVersion) + '\0' + print_graph(ast) + '\0' + dev.name() + '\0' +
                               dev.compiler().name() + '\0' + std::to_string(target.max_threads) + '\0' +
                               std::to_string(target.vector_bytes) + '\0' + std::to_string(target.max_local_size) + '\0' +
                               std::to_string(target.local_memory_bytes) + '\0' + std::to_string(width));
}

// One round's new kernels: compiled in parallel (compilers are separate processes), then timed
// one after the other (timings must not share the cores).
std::vector<Timed> time_all(runtime::Device& dev, std::vector<std::pair<std::vector<Opt>, codegen::Program>> kernels,
                            const KernelBuffers& bufs, double best) {
  std::vector<std::string> binaries(kernels.size());
  std::vector<bool> ok(kernels.size(), false);
  support::parallel_for(kernels.size(), [&](size_t i) {
    try {
      binaries[i] = dev.compiler().compile(kernels[i].second.source);
      ok[i] = true;
    } catch (const Error& e) {
      if (env::debug_level() >= 2) fprintf(stderr, "BEAM: %s does not compile: %s\n", kernels[i].second.name.c_str(), e.what());
    }
  });
  std::vector<Timed> out;
  for (size_t i = 0; i < kernels.size(); i++) {
    if (!ok[i]) continue;
    // A device may still refuse a kernel it compiled (too many work-items for its registers, ...):
    // such a candidate is no choice, as one that does not compile.
    const std::string name = kernels[i].second.name;
    try {
      Candidate c{std::move(kernels[i].second), nullptr};
      c.runtime = runtime::load_compiled(dev, binaries[i], c.program.source, c.program.name);
      out.push_back({std::move(kernels[i].first), time_candidate(c, bufs, kTimedRuns, kHopeless * best)});
      beam_stats().timed++;
    } catch (const Error& e) {
      if (env::debug_level() >= 2) fprintf(stderr, "BEAM: %s does not run: %s\n", name.c_str(), e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const Timed& a, const Timed& b) { return a.seconds < b.seconds; });
  return out;
}

// The search's winner against its start (the faster of no opts and the hand-written ones), timed in
// alternation. On a noisy machine one candidate's timings can fall in a quiet moment: a winner
// must beat the start again, side by side, or the start is kept (else a lucky timing can make BEAM
// pick opts slower than the hand-written ones).
std::vector<Opt> confirm(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target, const KernelBuffers& bufs,
                         const std::vector<Opt>& start, const std::vector<Opt>& winner) {
  const Candidate a = compile_candidate(ast, dev, target, start), b = compile_candidate(ast, dev, target, winner);
  double start_s = 1e30, winner_s = 1e30;
  for (int i = 0; i < kConfirmRounds; i++) {
    start_s = std::min(start_s, time_candidate(a, bufs, kTimedRuns, 1e30));
    winner_s = std::min(winner_s, time_candidate(b, bufs, kTimedRuns, 1e30));
  }
  if (env::debug_level() >= 2)
    fprintf(stderr, "BEAM %s: side by side, the winner %.2f us, its start %.2f us\n", kernel_name(ast).c_str(),
            winner_s * 1e6, start_s * 1e6);
  return winner_s < start_s ? winner : start;
}

std::vector<Opt> search(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target, int width) {
  KernelBuffers bufs(ast, dev);
  const int debug = env::debug_level();
  // Different opts can make the same code (a split of a loop of 1, ...): each source is timed once.
  std::set<std::string> seen;
  std::vector<std::pair<std::vector<Opt>, codegen::Program>> kernels;
  auto add = [&](std::vector<Opt> opts) {
    codegen::Program p = codegen::to_program(ast, target, opts);
    if (seen.insert(p.source).second) kernels.push_back({std::move(opts), std::move(p)});
  };
  add({});
  add(codegen::hand_coded_opts(ast, target));
  std::vector<Timed> beam = time_all(dev, std::move(kernels), bufs, 1e30);
  if (beam.empty()) throw_error("BEAM: kernel ", kernel_name(ast), " does not compile and run even without opts");
  const Timed start = beam[0];
  for (int round = 0; round < kMaxRounds; round++) {
    kernels.clear();
    for (const Timed& t : beam) {
      const UOpRef k = codegen::apply_opts(ast, t.opts, target);
      for (const Opt& o : codegen::possible_opts(k, target)) {
        std::vector<Opt> opts = t.opts;
        opts.push_back(o);
        add(std::move(opts));
      }
    }
    std::vector<Timed> timed = time_all(dev, std::move(kernels), bufs, beam[0].seconds);
    if (debug >= 2)
      fprintf(stderr, "BEAM %s round %d: %zu candidates, best %.2f us\n", kernel_name(ast).c_str(), round + 1,
              timed.size(), timed.empty() ? 0.0 : timed[0].seconds * 1e6);
    if (timed.empty() || timed[0].seconds > beam[0].seconds * (1 - kMinProgress)) break;
    timed.resize(std::min<size_t>(timed.size(), width));
    beam = std::move(timed);
  }
  if (debug >= 2) {
    fprintf(stderr, "BEAM %s: %.2f us (best without search %.2f us):", kernel_name(ast).c_str(), beam[0].seconds * 1e6,
            start.seconds * 1e6);
    for (const Opt& o : beam[0].opts) fprintf(stderr, " %s", o.str().c_str());
    fprintf(stderr, "\n");
  }
  return beam[0].opts == start.opts ? start.opts : confirm(ast, dev, target, bufs, start.opts, beam[0].opts);
}

}  // namespace

KernelBuffers::KernelBuffers(const UOpRef& ast, runtime::Device& dev) : dev_(dev) {
  for (const auto& [dtype, elements] : param_extents(ast)) {
    dtypes_.push_back(dtype);
    bytes_.push_back(static_cast<size_t>(elements) * static_cast<size_t>(dtype.itemsize()));
    addresses_.push_back(dev.allocator().alloc(bytes_.back()));
    write(addresses_.size() - 1, sample_data(dtype, static_cast<size_t>(elements)).data());
  }
}

KernelBuffers::~KernelBuffers() {
  for (size_t i = 0; i < addresses_.size(); i++) dev_.allocator().free(addresses_[i], bytes_[i]);
}

void KernelBuffers::write(size_t i, const void* host) { dev_.allocator().copyin(addresses_.at(i), host, bytes_.at(i)); }
void KernelBuffers::read(size_t i, void* host) const { dev_.allocator().copyout(host, addresses_.at(i), bytes_.at(i)); }

Candidate compile_candidate(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target,
                            const std::vector<Opt>& opts) {
  Candidate c;
  c.program = codegen::to_program(ast, target, opts);
  c.runtime = runtime::load_compiled(dev, dev.compiler().compile(c.program.source), c.program.source, c.program.name);
  return c;
}

double time_candidate(const Candidate& c, const KernelBuffers& bufs, int runs, double give_up_after) {
  auto launch = [&] { return c.runtime->launch_grid(bufs.addresses(), {}, {c.program.global_size, c.program.local_size}, true); };
  const double first = launch();  // also warms caches and pages in the buffers
  if (first > give_up_after) return first;
  double best = first;
  for (int i = 0; i < runs; i++) best = std::min(best, launch());
  return best;
}

std::vector<Opt> beam_search(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target, int width) {
  if (width < 1) throw_error("beam_search: BEAM must be >= 1, got ", width);
  const fs::path folder = runtime::disk_cache::folder("beam");
  const fs::path entry = runtime::disk_cache::entry_path(folder, cache_key(ast, dev, target, width), ".opts");
  if (runtime::disk_cache::holds(entry)) {
    try {
      std::vector<Opt> opts = codegen::parse_opts(runtime::disk_cache::payload(entry));
      codegen::apply_opts(ast, opts, target);
      beam_stats().cache_hits++;
      return opts;
    } catch (const Error& e) {
      fprintf(stderr, "kiln: BEAM cache entry %s does not fit its kernel (%s); searching again\n", entry.c_str(), e.what());
    }
  }
  beam_stats().searches++;
  std::vector<Opt> opts = search(ast, dev, target, width);
  runtime::disk_cache::store(entry, codegen::opts_to_string(opts));
  return opts;
}

BeamStats& beam_stats() {
  static BeamStats s;
  return s;
}

}  // namespace kiln::engine
