// Range propagation and fusion ("rangeify"): walk the tensor graph consumers-first, handing each
// node the index expressions its consumers read it with. A node read one way inherits its
// consumer's loops: that is fusion. A node is realized into a buffer (and gets its own kernel) when
// it must be: a root, CONTIGUOUS, a COPY and its source, a reduction that is reduced again or
// broadcast again (unless its rows are short and it runs once per row in its consumer's kernel),
// or an expensive node read in several different ways.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ir/symbolic.h"
#include "schedule/indexing.h"
#include "schedule/kernelize.h"
#include "schedule/schedule.h"

namespace kiln::schedule {
namespace {

// Recomputing a node in each consumer beats a buffer round trip unless the node reduces, is big,
// or is read in many different ways.
constexpr int kMaxRecomputeOps = 64;
constexpr size_t kMaxRecomputeReads = 8;
// A node of this many arithmetic ops whose elements a kernel would compute this many times over on average
// (a conv's input gradient re-reads each element once per kernel tap) is stored instead.
constexpr int kMinOpsToStoreReused = 8;
constexpr double kMaxRecomputeFactor = 4;
// A reduction over at most this many elements per output (64 KB of float32: a core's L1 or L2
// holds the row between its reads) may be broadcast inside its consumer's kernel; not one over
// fewer than a few vectors (a max pool's 2x2 windows would be recomputed per pixel in the backward
// pass, costing more than storing them).
constexpr int64_t kMaxBroadcastReduceRow = int64_t{1} << 14, kMinBroadcastReduceRow = 32;

// The node whose value a movement chain reads.
const UOp* base_of(const UOp* u) {
  while (group::Movement.has(u->op)) u = u->src[0].get();
  return u;
}

// How many different indices `reads` read at. Reads at one index under different gates (the pieces
// of a stack sharing a term) compute it once per element where the kernel upcasts the stacked loop.
size_t distinct_indices(const std::vector<Access>& reads) {
  std::vector<const std::vector<UOpRef>*> seen;
  for (const Access& a : reads)
    if (std::none_of(seen.begin(), seen.end(), [&](const auto* idx) { return *idx == a.idx; })) seen.push_back(&a.idx);
  return seen.size();
}

// A movement op whose result has more elements than its source (an EXPAND, a PAD).
bool enlarges(const UOp* u) {
  return group::Movement.has(u->op) && prod(u->shape_or_throw()) > prod(u->src[0]->shape_or_throw());
}

bool expands_an_axis(const UOp* u) {
  if (u->op != Ops::EXPAND) return false;
  const Shape &in = *u->src[0]->shape(), &out = *u->shape();
  for (size_t k = 0; k < in.size(); k++)
    if (in[k] == 1 && out[k] != 1) return true;
  return false;
}

// How many elements a REDUCE combines into each output, when it reduces its input's last axis
// (rows, as a softmax's); else 0. Others (a BatchNorm's sum of per-chunk partials over the
// batch, broadcast over N, H and W) change whole schedules around them when kept in their
// consumers' kernels, to the MNIST step's loss.
int64_t reduced_row_elements(const UOp* reduce) {
  const Shape& in = reduce->src[0]->shape_or_throw();
  const std::vector<int64_t>& axes = reduce->arg_as<ReduceArg>().axes;
  if (in.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(in.size()) - 1) == axes.end()) return 0;
  int64_t n = 1;
  for (int64_t axis : axes) n *= in[axis];
  return n;
}

class Rangeify {
 public:
  // `stored`: reductions broadcast again that must be stored (rejected by an earlier attempt).
  Rangeify(const std::vector<UOpRef>& roots, const std::unordered_set<const UOp*>& stored, bool rows_in_kernel)
      : stored_(stored), rows_in_kernel_(rows_in_kernel) {
    std::vector<UOpRef> srcs;
    for (const UOpRef& r : roots)
      if (!is_buffer_view(r.get())) srcs.push_back(r);
    sink_ = UOp::sink(srcs);
    topo_ = sink_->toposort();
    topo_.pop_back();  // the SINK itself
    for (const UOpRef& r : srcs) realized_.insert(r.get());
  }

  // The plan, or nullopt with rejected() grown when a broadcast reduction cannot stay in its
  // consumers' kernel: the nodes above it were planned as if it did (has_reduce), so the plan is
  // made again with it stored.
  std::optional<Plan> run() {
    seed_realizations();
    propagate_ranges();
    if (!rejected_.empty()) return std::nullopt;
    for (const UOp* u : topo_)
      if (realized_.count(u)) plan_.realized.push_back(u);
    plan_.keep_alive = sink_;
    return std::move(plan_);
  }

  const std::unordered_set<const UOp*>& rejected() const { return rejected_; }

 private:
  // Realizations that follow from the graph's structure alone, found sources-first.
  void seed_realizations() {
    std::unordered_map<const UOp*, bool> has_reduce;  // an unrealized REDUCE feeds this node
    for (const UOp* u : topo_) {
      // CONTIGUOUS of something already contiguous is a no-op; otherwise it asks for a buffer.
      if (u->op == Ops::CONTIGUOUS && !is_buffer_view(u)) realized_.insert(u);
      // A COPY moves whole buffers: its result is one, and so is its source unless it already is.
      if (u->op == Ops::COPY) {
        realized_.insert(u);
        if (!is_buffer_view(u->src[0].get())) realized_.insert(u->src[0].get());
      }
      // A GATHER reads its source at addresses only known once its index is loaded: the source is
      // read from memory (a buffer, or a node stored first), never computed at each gathered element.
      if (u->op == Ops::GATHER) {
        const UOp* base = base_of(u->src[0].get());
        if (base->op != Ops::BUFFER && base->op != Ops::CONST) realized_.insert(base);
      }
      bool broadcast_in_kernel = false;
      if (expands_an_axis(u) && has_reduce[u->src[0].get()]) {
        // A reduction broadcast again is stored, unless its rows are short: then its consumer's
        // kernel computes it once per row, before the loops along the row (a softmax's max and sum
        // over rows in L1), if the loops it varies with are outermost there (check_broadcasts).
        const UOp* base = base_of(u->src[0].get());
        const int64_t rows = reduce_rows_[u->src[0].get()];
        if (!rows_in_kernel_ || rows > kMaxBroadcastReduceRow || rows < kMinBroadcastReduceRow || stored_.count(base)) {
          realized_.insert(base);
        } else {
          broadcast_.insert(base);
          broadcast_in_kernel = true;
        }
      }
      // A reduction over the result of another (a max pool of a convolution) would nest the inner
      // loop nest in the outer one, which vectorizes neither: the inner result is stored.
      if (u->op == Ops::REDUCE && has_reduce[u->src[0].get()]) realized_.insert(base_of(u->src[0].get()));
      // A broadcast that stays in the kernel ends its reduction's nest: the value is fixed along
      // the broadcast axes, and whatever reduces over them runs after it, not around it.
      bool reduce = u->op == Ops::REDUCE;
      int64_t rows = 0;
      for (const UOpRef& s : u->src)
        if (!realized_.count(base_of(s.get()))) {
          reduce |= has_reduce[s.get()];
          rows = std::max(rows, reduce_rows_[s.get()]);
        }
      if (u->op == Ops::REDUCE) rows = reduced_row_elements(u);
      has_reduce[u] = reduce && !broadcast_in_kernel;
      reduce_rows_[u] = has_reduce[u] ? rows : 0;
      int size = base_of(u)->op == Ops::CONST ? 0 : 1;  // a constant and its views are free
      for (const UOpRef& s : u->src)
        if (!realized_.count(base_of(s.get()))) size += op_count_[s.get()];
      op_count_[u] = std::min(size, kMaxRecomputeOps + 1);
      int alu = group::ALU.has(u->op) ? 1 : 0;  // movement ops are free index math
      for (const UOpRef& s : u->src)
        if (!realized_.count(base_of(s.get()))) alu += alu_count_[s.get()];
      alu_count_[u] = std::min(alu, kMaxRecomputeOps + 1);
    }
    has_reduce_ = std::move(has_reduce);
  }

  UOpRef fresh_range(int64_t size, AxisType type) {
    return UOp::make(Ops::RANGE, dtypes::index, {index_const(size)}, RangeArg{next_range_++, type});
  }

  void add_access(const UOp* u, Access a) {
    auto& list = accesses_[u];
    if (std::find(list.begin(), list.end(), a) == list.end()) list.push_back(std::move(a));
  }

  void propagate_ranges() {
    for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
      const UOp* u = *it;
      if ((u->op == Ops::BUFFER || u->op == Ops::CONST) && !realized_.count(u)) continue;  // read in place
      std::vector<Access>& reads = accesses_[u];
      // a view of a buffer, a constant or a node stored anyway is read in place however many ways:
      // its reads are index math
      const UOp* base = base_of(u);
      const bool read_in_place = base != u && (base->op == Ops::BUFFER || base->op == Ops::CONST || realized_.count(base));
      const size_t ways = read_in_place ? 1 : distinct_indices(reads);
      // a view larger than its source (a broadcast) passes its reads on, to store the source if they
      // must: stored itself it would hold copies of each element (a matmul's output gradient broadcast
      // along k, read by both input gradients, would take k times its size)
      const bool may_store = !enlarges(u);
      if (may_store && !realized_.count(u) &&
          ((reads.size() > 1 && has_reduce_[u]) ||
           (ways > 1 && (op_count_[u] > kMaxRecomputeOps || ways > kMaxRecomputeReads))))
        realized_.insert(u);
      if (may_store && !realized_.count(u) && alu_count_[u] >= kMinOpsToStoreReused &&
          recompute_factor(u) >= kMaxRecomputeFactor)
        realized_.insert(u);
      if (!realized_.count(u) && broadcast_.count(u) && !runs_once_per_value(u)) rejected_.insert(u);
      std::vector<Access> outs;
      if (realized_.count(u)) {
        Access own{{}, true_const()};
        for (int64_t n : u->shape_or_throw()) own.idx.push_back(n == 1 ? index_const(0) : fresh_range(n, AxisType::LOOP));
        plan_.own[u] = own;
        outs = {own};
        scope_[u].clear();
        for (const UOpRef& i : own.idx)
          if (i->op == Ops::RANGE) scope_[u][u].insert(i.get());
      } else {
        outs = reads;
      }
      if (u->op == Ops::COPY) continue;  // not computed by a kernel: its source is read as a whole buffer
      for (const Access& a : outs) push_to_sources(u, a);
    }
  }

  // Whether a reduction broadcast in its consumers' kernels is computed once per value there: it is
  // read at one element per iteration of output loops only, and the loops around its reads that it
  // does not vary with all nest inside the ones it varies with. (A
  // row's max, varying with the row loop, is computed before the loop along the row; a column's
  // max read inside the row loop would be recomputed for every row.)
  bool runs_once_per_value(const UOp* u) {
    std::unordered_set<const UOp*> varies;
    for (const Access& a : accesses_[u]) {
      if (!is_always_valid(a)) return false;
      for (const UOpRef& i : a.idx) {
        // each element read by one iteration: a max pool's window max read at (y/2, x/2) would be
        // recomputed for each of the window's pixels
        if (i->op != Ops::RANGE && i->op != Ops::CONST) return false;
        if (i->op == Ops::RANGE) varies.insert(i.get());
      }
    }
    // one varying with another reduction's loop would nest its loop in that one's; one varying
    // with no loop (a loss's mean over the batch) is one value, as cheap to store
    if (varies.empty()) return false;
    for (const UOp* r : varies)
      if (r->arg_as<RangeArg>().reduces()) return false;
    for (const auto& [kernel, ranges] : scope_[u])
      for (const UOp* outside : ranges)
        if (!varies.count(outside))
          for (const UOp* r : varies)
            if (outside->arg_as<RangeArg>().nest_rank() < r->arg_as<RangeArg>().nest_rank()) return false;
    return true;
  }

  // How many times over the loops around u's reads would compute each of its elements (in the
  // kernel that recomputes it most). A loop that every read of u is gated to one iteration of (u
  // is a piece of a stack, as a transform's rows) does not count: the kernel upcasts such loops
  // (codegen/heuristics/), and u, the same expression in every copy, is computed once for all of them.
  double recompute_factor(const UOp* u) {
    std::unordered_map<const UOp*, size_t> pinned;
    for (const Access& a : accesses_[u])
      for (const UOp* r : ranges_pinned_by(a.valid)) pinned[r]++;
    double worst = 0;
    for (const auto& [kernel, ranges] : scope_[u]) {
      double iterations = 1;
      for (const UOp* r : ranges)
        if (pinned[r] != accesses_[u].size()) iterations *= static_cast<double>(r->src[0]->const_value());
      worst = std::max(worst, iterations);
    }
    return worst / std::max<double>(1, static_cast<double>(prod(u->shape_or_throw())));
  }

  // src is read inside u's loops (per kernel), plus `extra` reduction loops.
  void widen_scope(const UOp* src, const UOp* u, const std::vector<UOpRef>& extra = {}) {
    for (const auto& [kernel, ranges] : scope_[u]) {
      auto& s = scope_[src][kernel];
      s.insert(ranges.begin(), ranges.end());
      for (const UOpRef& r : extra) s.insert(r.get());
    }
  }

  void push_to_sources(const UOp* u, const Access& a) {
    if (group::Movement.has(u->op)) {
      add_access(u->src[0].get(), apply_movement_op(*u, a));
      widen_scope(u->src[0].get(), u);
    } else if (u->op == Ops::GATHER) {
      // only the index is read at u's own indices; the source is read in place (seed_realizations)
      add_access(u->src[1].get(), a);
      widen_scope(u->src[1].get(), u);
    } else if (u->op == Ops::REDUCE) {
      Access in = a;
      std::vector<UOpRef> ranges;
      const Shape& in_shape = u->src[0]->shape_or_throw();
      for (int64_t axis : u->arg_as<ReduceArg>().axes) {
        if (in_shape[axis] == 1) continue;  // a[axis] is already the constant 0
        in.idx[axis] = fresh_range(in_shape[axis], AxisType::REDUCE);
        ranges.push_back(in.idx[axis]);
      }
      plan_.reduce_ranges[{u, key_of(a)}] = ranges;
      plan_.keep_accesses.push_back(a);
      add_access(u->src[0].get(), std::move(in));
      widen_scope(u->src[0].get(), u, ranges);
    } else {
      for (const UOpRef& s : u->src) {
        add_access(s.get(), a);
        widen_scope(s.get(), u);
      }
    }
  }

  UOpRef sink_;
  std::vector<const UOp*> topo_;
  const std::unordered_set<const UOp*>& stored_;
  const bool rows_in_kernel_;
  std::unordered_set<const UOp*> rejected_;
  std::unordered_set<const UOp*> realized_;
  std::unordered_map<const UOp*, bool> has_reduce_;
  // per node with an unrealized REDUCE below: how many elements that reduction combines per output
  // (reduced_row_elements)
  std::unordered_map<const UOp*, int64_t> reduce_rows_;
  // reductions (or nodes over them) broadcast inside their consumers' kernels, if runs_once_per_value
  std::unordered_set<const UOp*> broadcast_;
  std::unordered_map<const UOp*, int> op_count_;
  std::unordered_map<const UOp*, int> alu_count_;  // arithmetic ops among them
  std::unordered_map<const UOp*, std::vector<Access>> accesses_;
  // per node, per kernel (its realized root): the loops around the node's reads
  std::unordered_map<const UOp*, std::map<const UOp*, std::unordered_set<const UOp*>>> scope_;
  Plan plan_;
  int64_t next_range_ = 0;
};

}  // namespace

bool is_buffer_view(const UOp* u) {
  while (u->op == Ops::RESHAPE || u->op == Ops::CONTIGUOUS) u = u->src[0].get();
  return u->op == Ops::BUFFER;
}

UOpRef strip_contiguous(const UOpRef& u) {
  if (u->op == Ops::CONTIGUOUS) return strip_contiguous(u->src[0]);
  // a CONTIGUOUS may also sit under a RESHAPE: readback expects RESHAPEs over the BUFFER only
  if (u->op == Ops::RESHAPE) return u->with_src({strip_contiguous(u->src[0])});
  return u;
}

AccessKey key_of(const Access& a) {
  AccessKey k;
  for (const UOpRef& i : a.idx) k.push_back(i.get());
  k.push_back(a.valid.get());
  return k;
}

Plan plan_kernels(const std::vector<UOpRef>& roots, bool rows_in_kernel) {
  std::unordered_set<const UOp*> stored;
  while (true) {
    Rangeify attempt(roots, stored, rows_in_kernel);
    if (std::optional<Plan> plan = attempt.run()) return std::move(*plan);
    stored.insert(attempt.rejected().begin(), attempt.rejected().end());
  }
}

}  // namespace kiln::schedule
