// The codegen pipeline, in order: a list of named passes (passes.h), then the program's order and
// source. Each step's output is printable (DEBUG=5 AST and the passes, 6 linear UOps).
#include <algorithm>

#include "codegen/codegen.h"
#include "codegen/passes.h"
#include "kiln/ir/spec.h"
#include "support/env.h"

namespace kiln::codegen {

namespace {

// Calls visit(u, trips) for each UOp of a linearized kernel, trips being how often its loops run it.
template <typename Visit>
void for_each_with_trips(const std::vector<UOpRef>& linear, Visit visit) {
  double trips = 1;
  std::vector<double> stack;
  for (const UOpRef& u : linear) {
    if (u->op == Ops::RANGE) {
      stack.push_back(trips);
      trips *= u->src[0]->const_value();
    } else if (u->op == Ops::END) {
      for (size_t i = 1; i < u->src.size(); i++) {
        trips = stack.back();
        stack.pop_back();
      }
    } else {
      visit(u.get(), trips);
    }
  }
}

// The opts pass: applies `opts` (none: the hand-coded ones) and fills in what they decide: the
// launch's sizes and the kernel's name.
UOpRef choose_opts(const UOpRef& ast, const Target& target, const std::optional<std::vector<Opt>>& opts, Program& p,
                   std::vector<int64_t>& local_ids) {
  p.opts = opts ? *opts : hand_coded_opts(ast, target);
  UOpRef k = apply_opts(ast, p.opts, target);
  p.threads = thread_count(p.opts);
  for (const UOp* r : local_axes(k)) {
    p.local_size[local_ids.size()] = range_size(r);
    local_ids.push_back(axis_id(r));
  }
  // work-groups go along dimension 0: global = groups * local there, local elsewhere
  p.global_size = p.local_size;
  p.global_size[0] *= p.threads;
  p.name = kernel_name(k, false);
  p.display_name = kernel_name(k, true);
  return k;
}

bool has_unroll(const UOpRef& k) {
  const std::vector<const UOp*> topo = k->toposort();
  return std::any_of(topo.begin(), topo.end(),
                     [](const UOp* u) { return u->op == Ops::RANGE && axis_type(u) == AxisType::UNROLL; });
}

}  // namespace

double estimate_flops(const std::vector<UOpRef>& linear) {
  double flops = 0;
  for_each_with_trips(linear, [&](const UOp* u, double trips) {
    if (group::ALU.has(u->op) && !u->dtype.is_bool() && u->dtype.scalar != dtypes::index.scalar)
      flops += trips * u->dtype.count;  // index arithmetic and comparisons are not counted, as in tinygrad
  });
  return flops;
}

double estimate_stored_bytes(const std::vector<UOpRef>& linear) {
  double bytes = 0;
  for_each_with_trips(linear, [&](const UOp* u, double trips) {
    if (u->op == Ops::STORE && u->src[0]->src[0]->op == Ops::PARAM)
      bytes += trips * static_cast<double>(u->src[1]->dtype.itemsize() * u->src[1]->dtype.count);
  });
  return bytes;
}

Program to_program(const UOpRef& ast, const Target& target, const std::optional<std::vector<Opt>>& opts) {
  Program p;
  const bool check = env::get_int("SPEC", 0) > 0;
  if (check) spec::verify_kernel(ast);
  std::vector<int64_t> local_ids;
  const int vector_bytes = target.optimize ? target.vector_bytes : 0;
  bool unrolled = false;  // whether the kernel had UNROLL ranges, which expand_upcasts keeps scalar
  const std::vector<Pass> passes{
      Pass::rewrite("simplify ast", simplify_rules()),
      Pass::walk_of("opts", [&](const UOpRef& k) { return choose_opts(k, target, opts, p, local_ids); },
                    "opts are chosen for the whole kernel, each splitting a loop wherever it is used"),
      Pass::rewrite("vectorize unrolls", pm_vectorize_unrolls(),
                    [&](const UOpRef& k) {
                      unrolled = has_unroll(k);
                      return unroll_ctx(k, vector_bytes);
                    }),
      Pass::rewrite("simplify unrolled", simplify_rules()).if_changed(),
      Pass::walk_of("expand upcasts", [&](const UOpRef& k) { return expand_upcasts(k, vector_bytes, unrolled); },
                    "copies whole statements, with one vector axis chosen for all of the kernel's stores"),
      Pass::rewrite("simplify expanded", simplify_rules()).if_changed(),
      Pass::walk_of("block long sums", block_long_sums,
                    "reductions that share their loops are blocked together, in one loop nest"),
      Pass::rewrite("lower group reduces", pm_group_reduces(), group_reduce_ctx),
      Pass::walk_of("lower reduces", lower_reduces,
                    "reductions that share their loops become one loop nest, innermost reductions first"),
      Pass::rewrite("simplify lowered", simplify_rules()),
  };
  // The rest works on the program as a list: its order (linearize), and which loads to prefetch.
  p.linear = linearize(run_passes(ast, passes));
  if (check) spec::verify_linear(p.linear);
  p.flops = estimate_flops(p.linear);
  // An output bigger than the caches would only evict what the next kernels read, and each line
  // stored through them is read first (a store miss): such kernels store whole lines past them.
  const bool streaming = target.cache_bytes > 0 && estimate_stored_bytes(p.linear) >= static_cast<double>(target.cache_bytes);
  p.source = target.renderer->render({p.name, p.linear, p.threads, local_ids, p.local_size, streaming,
                                      prefetch_distances(p.linear, target.cache_bytes)});
  return p;
}

}  // namespace kiln::codegen
