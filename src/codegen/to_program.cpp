// The codegen pipeline, in order. Each step's output is printable (DEBUG=5 AST, 6 linear UOps).
#include "codegen/codegen.h"
#include "kiln/ir/spec.h"
#include "kiln/ir/symbolic.h"
#include "support/env.h"
#include "uop/rewrite_trace.h"

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
  UOpRef k = simplify(ast, "simplify ast");
  UOpRef before = k;
  p.opts = opts ? *opts : hand_coded_opts(k, target);
  k = apply_opts(k, p.opts, target);
  p.threads = thread_count(p.opts);
  std::vector<int64_t> local_ids;
  for (const UOp* r : local_axes(k)) {
    p.local_size[local_ids.size()] = range_size(r);
    local_ids.push_back(axis_id(r));
  }
  // work-groups go along dimension 0: global = groups * local there, local elsewhere
  p.global_size = p.local_size;
  p.global_size[0] *= p.threads;
  trace::record_pass("opts", before, k);
  p.name = kernel_name(k, false);
  p.display_name = kernel_name(k, true);
  before = k;
  k = expand_upcasts(k, target.optimize ? target.vector_bytes : 0);
  trace::record_pass("expand upcasts", before, k);
  before = k;
  k = block_long_sums(k);
  trace::record_pass("block long sums", before, k);
  before = k;
  k = lower_group_reduces(k);
  trace::record_pass("lower group reduces", before, k);
  before = k;
  k = lower_reduces(k);
  trace::record_pass("lower reduces", before, k);
  k = simplify(k, "simplify lowered");
  p.linear = linearize(k);
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
