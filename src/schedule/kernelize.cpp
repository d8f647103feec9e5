// Builds each realized node's kernel AST from the Plan: the node's value with every read turned
// into index math over its own loop ranges, stored into its buffer.
//   SINK( END( STORE( INDEX(PARAM0, idx), value ), loop ranges... ) )
// A COPY node is no kernel: its step copies its source's buffer into its own.
#include <algorithm>
#include <atomic>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "kiln/ir/spec.h"
#include "kiln/ir/symbolic.h"
#include "support/env.h"
#include "schedule/devices.h"
#include "schedule/kernelize.h"
#include "schedule/schedule.h"
#include "uop/rewrite_trace.h"

namespace kiln::schedule {
namespace {

class KernelBuilder {
 public:
  // One kernel storing every node of `roots` (all of one shape, computed over the first one's
  // loops); each reads the others as values, not from their buffers.
  KernelBuilder(const Plan& plan, const std::unordered_map<const UOp*, UOpRef>& buffers, std::vector<const UOp*> roots)
      : plan_(plan), buffers_(buffers), roots_(std::move(roots)), computed_here_(roots_.begin(), roots_.end()) {}

  // Returns the kernel SINK; `bufs` receives the BUFFERs bound to PARAM 0.. (outputs first).
  UOpRef build(std::vector<UOpRef>& bufs) {
    const Access& own = plan_.own.at(roots_[0]);
    for (const UOp* r : roots_) param_for(buffers_.at(r));
    std::vector<UOpRef> stores;
    for (const UOp* r : roots_) {
      UOpRef value = lower(r, own, true);
      UOpRef at = index(param_for(buffers_.at(r)), flat_index(own.idx, r->shape_or_throw()), own.valid);
      stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {at, value}));
    }
    UOpRef store = stores.size() == 1 ? stores[0] : UOp::make(Ops::GROUP, dtypes::void_, stores);
    std::vector<UOpRef> end_src{store};
    for (const UOpRef& i : own.idx)
      if (i->op == Ops::RANGE) end_src.push_back(i);
    UOpRef body = end_src.size() > 1 ? UOp::make(Ops::END, dtypes::void_, end_src) : store;
    bufs = params_;
    return UOp::sink({body});
  }

 private:
  UOpRef param_for(const UOpRef& buffer) {
    for (size_t i = 0; i < params_.size(); i++)
      if (params_[i] == buffer) return UOp::make(Ops::PARAM, buffer->dtype.as_ptr(), {}, int64_t(i));
    params_.push_back(buffer);
    return UOp::make(Ops::PARAM, buffer->dtype.as_ptr(), {}, int64_t(params_.size() - 1));
  }

  static UOpRef index(const UOpRef& param, const UOpRef& flat, const UOpRef& valid) {
    std::vector<UOpRef> src{param, flat};
    if (valid != true_const()) src.push_back(valid);  // a gate: never touch memory where invalid
    return UOp::make(Ops::INDEX, param->dtype, std::move(src));
  }

  UOpRef load(const UOpRef& buffer, const UOpRef& flat, const UOpRef& valid) {
    return UOp::make(Ops::LOAD, buffer->dtype.base(), {index(param_for(buffer), flat, valid)});
  }

  // What computing `u` at access `a` reads: (node, access) pairs. Loads and constants read nothing.
  std::vector<std::pair<const UOp*, Access>> reads_of(const UOp* u, const Access& a, bool is_root) {
    if (u->op == Ops::BUFFER || u->op == Ops::CONST || (!is_root && loaded(u))) return {};
    if (group::Movement.has(u->op)) return {{u->src[0].get(), apply_movement_op(*u, a)}};
    if (u->op == Ops::GATHER) return {{u->src[1].get(), a}, {u->src[0].get(), gathered_access(u, a)}};
    if (u->op == Ops::REDUCE) {
      const Shape& in_shape = u->src[0]->shape_or_throw();
      const auto& ranges = plan_.reduce_ranges.at({u, key_of(a)});
      Access in = a;
      size_t next = 0;
      for (int64_t axis : u->arg_as<ReduceArg>().axes) {
        if (in_shape[axis] == 0) return {};  // an empty reduction is its identity
        if (in_shape[axis] != 1) in.idx[axis] = ranges[next++];
      }
      return {{u->src[0].get(), in}};
    }
    std::vector<std::pair<const UOp*, Access>> reads;
    for (const UOpRef& s : u->src) reads.push_back({s.get(), a});
    return reads;
  }

  // Whether a GATHER's loaded index `v` is in [0, n), compared in its own dtype (an int64 index
  // past int32 must not wrap into range).
  static UOpRef gather_in_range(const UOpRef& v, int64_t n) {
    UOpRef below_n = v < UOp::const_(v->dtype, static_cast<double>(n));
    return v->dtype.is_unsigned() ? below_n : (UOp::const_(v->dtype, -1) < v) & below_n;
  }

  // Where a GATHER reads its source: u's own indices with the loaded index value on its axis, gated
  // to indices in range (the others read 0). The index is lowered first: its value is the address.
  Access gathered_access(const UOp* u, const Access& a) {
    const int64_t axis = u->arg_as<int64_t>();
    UOpRef v = lower(u->src[1].get(), a, false);
    Access in = a;
    in.idx[axis] = v->dtype == dtypes::index ? v : UOp::make(Ops::CAST, dtypes::index, {v});
    in.valid = simplify(a.valid & gather_in_range(v, u->src[0]->shape_or_throw()[axis]));
    return in;
  }

  // The kernel expression for `u` at access `a`, given the expressions of what it reads.
  UOpRef combine(const UOp* u, const Access& a, bool is_root, std::vector<UOpRef> inputs) {
    if (u->op == Ops::BUFFER) return load(u->ref(), a.idx[0], a.valid);
    if (!is_root && loaded(u)) return load(buffers_.at(u), flat_index(a.idx, u->shape_or_throw()), a.valid);
    if (u->op == Ops::CONST) return u->ref();
    if (u->op == Ops::PAD) {
      UOpRef cond;
      apply_movement_op(*u, a, &cond);
      return cond == true_const() ? inputs[0] : UOp::make(Ops::WHERE, u->dtype, {cond, inputs[0], u->const_like(0)});
    }
    if (group::Movement.has(u->op) || u->op == Ops::CONTIGUOUS) return inputs[0];
    if (u->op == Ops::GATHER) {  // a source that is a constant is not gated by its load: gate it here
      UOpRef ok = gather_in_range(inputs[0], u->src[0]->shape_or_throw()[u->arg_as<int64_t>()]);
      return UOp::make(Ops::WHERE, u->dtype, {ok, inputs[1], u->const_like(0)});
    }
    if (u->op == Ops::REDUCE) {
      const Ops op = u->arg_as<ReduceArg>().op;
      if (inputs.empty()) return UOp::const_(u->dtype, reduce_identity(op, u->dtype));
      const auto& ranges = plan_.reduce_ranges.at({u, key_of(a)});
      if (ranges.empty()) return inputs[0];
      std::vector<UOpRef> src{inputs[0]};
      src.insert(src.end(), ranges.begin(), ranges.end());
      return UOp::make(Ops::REDUCE, u->dtype, std::move(src), ReduceArg{op, {}});
    }
    if (group::Elementwise.has(u->op)) return UOp::make(u->op, u->dtype, std::move(inputs), u->arg);
    throw_error("schedule: cannot put ", op_name(u->op), " in a kernel");
  }

  // The kernel expression for `node` at access `at` (`is_root`: the kernel's own node, computed,
  // not loaded). Iterative, with a memo per (node, access), so deep graphs don't overflow the stack
  // and shared subexpressions are built once. (A GATHER's index is lowered by a nested call: its
  // value is part of the address its source is read at.)
  UOpRef lower(const UOp* node, const Access& at, bool is_root) {
    if (!is_root)
      if (auto it = memo_.find(std::make_pair(node, key_of(at))); it != memo_.end()) return it->second;
    struct Frame {
      const UOp* u;
      const Access* a;  // points into keep_
      bool is_root;
      std::vector<std::pair<const UOp*, const Access*>> reads;
      size_t next = 0;
    };
    auto memo_key = [](const UOp* u, const Access& a) { return std::make_pair(u, key_of(a)); };
    auto kept = [&](Access a) -> const Access* { return &keep_.emplace_back(std::move(a)); };
    auto frame = [&](const UOp* u, const Access* a, bool is_root) {
      Frame f{u, a, is_root, {}, 0};
      for (auto& [node, access] : reads_of(u, *a, is_root)) f.reads.push_back({node, kept(std::move(access))});
      return f;
    };
    std::vector<Frame> stack;
    stack.push_back(frame(node, kept(at), is_root));
    UOpRef result;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.reads.size()) {
        auto [u, a] = f.reads[f.next++];
        if (!memo_.count(memo_key(u, *a))) stack.push_back(frame(u, a, false));
        continue;
      }
      std::vector<UOpRef> inputs;
      for (auto [u, a] : f.reads) inputs.push_back(memo_.at(memo_key(u, *a)));
      UOpRef value = combine(f.u, *f.a, f.is_root, std::move(inputs));
      if (!f.is_root) memo_[memo_key(f.u, *f.a)] = value;
      if (stack.size() == 1) result = value;
      stack.pop_back();
    }
    return result;
  }

  // A realized node this kernel reads from its buffer (the others it computes).
  bool loaded(const UOp* u) const { return buffers_.count(u) && !computed_here_.count(u); }

  const Plan& plan_;
  const std::unordered_map<const UOp*, UOpRef>& buffers_;
  std::vector<const UOp*> roots_;
  std::unordered_set<const UOp*> computed_here_;
  std::vector<UOpRef> params_;
  std::map<std::pair<const UOp*, AccessKey>, UOpRef> memo_;
  std::deque<Access> keep_;  // every access a memo key points into (a deque: pointers stay valid)
};

// Renumbers a kernel's ranges 0..n in a fixed order (loops by axis, then reductions as they
// appear), so identical kernels have identical ASTs and share one compiled program.
UOpRef renumber_ranges(const UOpRef& sink) {
  std::unordered_map<const UOp*, UOpRef> map;
  std::vector<const UOp*> loops, reduces;
  for (const UOp* u : sink->toposort())
    if (u->op == Ops::RANGE) (u->arg_as<RangeArg>().type == AxisType::REDUCE ? reduces : loops).push_back(u);
  auto by_id = [](const UOp* a, const UOp* b) { return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id; };
  std::sort(loops.begin(), loops.end(), by_id);
  int64_t next = 0;
  for (auto* list : {&loops, &reduces})
    for (const UOp* r : *list) map[r] = r->with_arg(RangeArg{next++, r->arg_as<RangeArg>().type});
  return substitute(sink, map);
}

// DETACH only stops gradients (no_grad wraps every result in one): the scheduler sees through it,
// so it never cuts a movement chain.
const PatternMatcher& drop_detach() {
  static const PatternMatcher pm{{
      make_rule(UPat(Ops::DETACH).named("d"), [](RewriteCtx*, const Match& m) { return m["d"]->src[0]; }),
  }};
  return pm;
}

// The BUFFER a COPY reads: its source's own buffer, or the one its source is a view of.
UOpRef copy_source(const UOp* copy, const std::unordered_map<const UOp*, UOpRef>& buffers) {
  const UOp* src = copy->src[0].get();
  if (auto it = buffers.find(src); it != buffers.end()) return it->second;
  while (src->op != Ops::BUFFER) src = src->src[0].get();  // RESHAPEs and CONTIGUOUSes over it
  return src->ref();
}

// Devices run kernels over their own memory only; assign_devices makes every kernel's buffers share one.
void check_one_device(const UOpRef& kernel, const std::vector<UOpRef>& bufs) {
  for (const UOpRef& b : bufs)
    if (b->arg_as<BufferArg>().device != bufs[0]->arg_as<BufferArg>().device)
      throw_error("schedule: kernel ", kernel_name(kernel), " would read buffers on ", bufs[0]->arg_as<BufferArg>().device,
                  " and ", b->arg_as<BufferArg>().device, "; copy one with .to() first");
}

}  // namespace

UOpRef copy_ast() { return UOp::make(Ops::COPY, dtypes::void_); }

Schedule build_schedule(const std::vector<UOpRef>& roots, const std::string& device_of_constants,
                        const TargetOf& target_of) {
  Schedule out;
  if (env::get_int("SPEC", 0) > 0) spec::verify_tensor_graph(UOp::sink(roots));
  // The graph as it will run: without DETACH, convolutions in their device's layout (conv_layout.cpp),
  // matmuls in their device's tiles (matmul_tiles.cpp), large reductions split in two (split_reduce.cpp).
  // `run_of` is each caller's node's version in it: tensors hold the caller's nodes, DETACHes and all.
  const UOpRef sink = UOp::sink(roots);
  std::unordered_map<const UOp*, UOpRef> run_of = graph_rewrite_map(sink, drop_detach(), {.name = "drop detach"});
  UOpRef laid_out = lay_out_convs(run_of.at(sink.get()), target_of, device_of_constants, run_of);
  UOpRef tiled = tile_matmuls(laid_out, target_of, device_of_constants, run_of);
  UOpRef split = split_reduces(tiled, run_of);
  std::vector<UOpRef> run_roots(split->src.begin(), split->src.end());
  std::unordered_map<const UOp*, UOpRef> run_becomes;  // what each realized node of the run graph becomes
  for (const UOpRef& r : run_roots)
    if (is_buffer_view(r.get())) run_becomes[r.get()] = strip_contiguous(r);
  const std::unordered_map<const UOp*, std::string> device = assign_devices(split, device_of_constants);
  // Only kernels that run their loops in order keep a row's reductions (else, as in OpenCL's fused
  // softmax, every work-item recomputes its row's reductions).
  std::unordered_map<std::string, bool> in_order;
  for (const auto& [node, name] : device) in_order.try_emplace(name, false);
  for (auto& [name, answer] : in_order) answer = target_of(name).loops_in_order;
  const bool rows_in_kernel = std::all_of(in_order.begin(), in_order.end(), [](const auto& d) { return d.second; });
  Plan plan = plan_kernels(run_roots, rows_in_kernel);
  std::unordered_map<const UOp*, UOpRef> buffers;
  for (const UOp* u : plan.realized)
    buffers[u] = UOp::make(Ops::BUFFER, u->dtype, {}, BufferArg{next_buffer_id(), prod(u->shape_or_throw()), device.at(u)});
  for (const UOp* u : plan.realized) {
    const UOpRef& buf = buffers.at(u);
    const Shape& shape = u->shape_or_throw();
    run_becomes[u] = shape == Shape{prod(shape)} ? buf : UOp::make(Ops::RESHAPE, u->dtype, {buf}, shape);
  }
  std::vector<UOpRef> calls;
  for (const std::vector<const UOp*>& group : kernel_groups(plan)) {
    if (prod(group[0]->shape_or_throw()) == 0) continue;  // nothing to compute
    if (group[0]->op == Ops::COPY) {
      calls.push_back(UOp::make(Ops::CALL, dtypes::void_, {copy_ast(), buffers.at(group[0]), copy_source(group[0], buffers)}));
      continue;
    }
    std::vector<UOpRef> bufs;
    UOpRef kernel = renumber_ranges(KernelBuilder(plan, buffers, group).build(bufs));
    check_one_device(kernel, bufs);
    if (trace::enabled()) {
      std::vector<UOpRef> computed;
      for (const UOp* u : group) computed.push_back(u->ref());
      trace::record_pass("rangeify " + kernel_name(kernel), UOp::sink(std::move(computed)), kernel);
    }
    std::vector<UOpRef> call_src{kernel};
    call_src.insert(call_src.end(), bufs.begin(), bufs.end());
    calls.push_back(UOp::make(Ops::CALL, dtypes::void_, std::move(call_src)));
  }
  out.linear = UOp::make(Ops::LINEAR, dtypes::void_, std::move(calls));
  trace::record_pass("kernels", split, out.linear);
  // the caller's nodes become what their run versions became (several may share one)
  for (const auto& [node, run] : run_of)
    if (auto it = run_becomes.find(run.get()); it != run_becomes.end()) {
      out.becomes[node] = it->second;
      out.keep_alive.push_back(node->ref());
    }
  return out;
}

UOpRef follow_rewrite(const UOpRef& sink, const std::unordered_map<const UOp*, UOpRef>& rewritten, bool replaced,
                      std::unordered_map<const UOp*, UOpRef>& versions) {
  const UOpRef& out = rewritten.at(sink.get());
  for (auto& [node, version] : versions) version = rewritten.at(version.get());
  if (!replaced) return out;
  std::unordered_set<const UOp*> in_graph;
  for (const UOp* u : out->toposort()) in_graph.insert(u);
  std::erase_if(versions, [&](const auto& entry) { return !in_graph.count(entry.second.get()); });
  return out;
}

int64_t next_buffer_id() {
  static std::atomic<int64_t> next{0};
  return next++;
}

}  // namespace kiln::schedule
