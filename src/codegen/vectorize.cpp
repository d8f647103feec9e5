// Vectorization of one UPCAST axis: instead of n scalar copies of a statement, a few copies whose
// values are SIMD vectors (float32x16, ...) along the axis. The C renderer prints them with the
// compilers' vector types, which map to AVX-512/AVX2 registers; tinygrad's expander does the same
// with its UNROLL/CONTRACT ops.
//
// The axis is cut into chunks of the widest power-of-two widths that fit (20 lanes: 16 + 4). In a
// chunk, each value that depends on the axis becomes:
//   a LOAD whose address steps by 1 along it   → one vector LOAD
//   + - * / and negation of floats             → the same op on vectors (scalars broadcast)
//   max of floats                              → the same op on vectors
//   exp and exp2 of float32                    → the same op on vectors (the C renderer
//                                                defines them inline, c_math.cpp)
//   comparisons of float32, and/or/xor of bools → bool vectors (in C: int32 masks, all ones
//                                                for true, what comparing vectors gives)
//   a select of float32 values                 → a select of vectors (bitwise, by the mask);
//                                                selected lane by lane, clang's SLP vectorizer
//                                                gathered the lanes (a ReLU's gradient
//                                                transposed to NCHW)
//   a sum or max (REDUCE ADD/MAX) of such a value → a vector accumulator
//   anything else (integer math, other comparisons and selects, math functions, gathers)
//                                              → VECTORIZE of per-lane copies, each reading its
//                                                vector sources' lane (GEP)
// and a STORE to a contiguous address stores the vector.
#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/codegen.h"
#include "codegen/opt.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {

std::optional<int64_t> linear_coefficient(const UOp* e, const UOp* axis) {
  if (e == axis) return 1;
  const auto topo = e->toposort();
  if (std::find(topo.begin(), topo.end(), axis) == topo.end()) return 0;
  auto c = [&](size_t i) { return linear_coefficient(e->src[i].get(), axis); };
  switch (e->op) {
    case Ops::ADD: case Ops::SUB: {
      auto a = c(0), b = c(1);
      if (!a || !b) return std::nullopt;
      return e->op == Ops::ADD ? *a + *b : *a - *b;
    }
    case Ops::NEG:
      if (auto a = c(0)) return -*a;
      return std::nullopt;
    case Ops::MUL:
      for (size_t i = 0; i < 2; i++)
        if (e->src[1 - i]->op == Ops::CONST)
          if (auto a = c(i)) return *a * static_cast<int64_t>(e->src[1 - i]->const_value());
      return std::nullopt;
    default: return std::nullopt;
  }
}

namespace {

bool vectorizable_dtype(DType d) {
  return d.count == 1 && !d.ptr && (d.scalar == ScalarType::Float32 || d.scalar == ScalarType::Float64);
}
bool scalar_f32(DType d) { return d.count == 1 && !d.ptr && d.scalar == ScalarType::Float32; }
bool scalar_bool(DType d) { return d.count == 1 && !d.ptr && d.is_bool(); }

// Reductions that accumulate in vectors: their lanes (and chunks) combine with the same op.
bool vector_reduce(const UOp* u) {
  const Ops op = u->arg_as<ReduceArg>().op;
  return vectorizable_dtype(u->dtype) && (op == Ops::ADD || op == Ops::MAX);
}
UOpRef combine(Ops op, const UOpRef& a, const UOpRef& b) { return op == Ops::ADD ? a + b : a->alu(Ops::MAX, {b}); }

class Vectorizer {
 public:
  Vectorizer(const UOp* axis, int64_t offset, int64_t lanes) : axis_(axis), offset_(offset), lanes_(lanes) {}

  // REDUCE(x, ranges) with the axis among its ranges: this chunk's lanes of x reduced in a vector
  // accumulator over the other ranges, then the lanes combined.
  UOpRef reduce_lanes(const UOpRef& reduce) {
    std::vector<UOpRef> ranges;
    for (size_t i = 1; i < reduce->src.size(); i++)
      if (reduce->src[i].get() != axis_) ranges.push_back(reduce->src[i]);
    UOpRef x = lanes_ == 1 ? substitute(reduce->src[0], {{axis_, UOp::const_(axis_->dtype, double(offset_))}})
                           : broadcast(value(reduce->src[0]));
    if (!ranges.empty()) {
      ranges.insert(ranges.begin(), x);
      x = UOp::make(Ops::REDUCE, x->dtype, std::move(ranges), reduce->arg);
    }
    if (lanes_ == 1) return x;
    const Ops op = reduce->arg_as<ReduceArg>().op;
    UOpRef total = UOp::make(Ops::GEP, reduce->dtype, {x}, int64_t{0});
    for (int64_t i = 1; i < lanes_; i++) total = combine(op, total, UOp::make(Ops::GEP, reduce->dtype, {x}, i));
    return total;
  }

  UOpRef statement(const UOpRef& s) {
    if (!depends(s.get())) return s;
    if (s->op == Ops::GROUP) {
      std::vector<UOpRef> src;
      for (const UOpRef& x : s->src) src.push_back(statement(x));
      return s->with_src(std::move(src));
    }
    if (s->op == Ops::STORE && contiguous(s->src[0]) && vectorizable_dtype(s->src[1]->dtype))
      return UOp::make(Ops::STORE, dtypes::void_, {first_lane(s->src[0]), broadcast(value(s->src[1]))});
    std::vector<UOpRef> copies;
    for (int64_t i = 0; i < lanes_; i++) copies.push_back(lane(s, i));
    return UOp::make(Ops::GROUP, dtypes::void_, std::move(copies));
  }

 private:
  // The value of `u` in this chunk: a vector if it depends on the axis, else `u` itself. Values
  // that cannot be vectors are a VECTORIZE of per-lane copies, which read their vector sources
  // lane by lane (GEP).
  UOpRef value(const UOpRef& u) {
    if (!depends(u.get())) return u;
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    UOpRef out;
    const DType vec = u->dtype.vec(static_cast<int>(lanes_));
    static constexpr OpSet kVectorAlu{Ops::ADD, Ops::SUB, Ops::MUL, Ops::FDIV, Ops::NEG, Ops::MAX};
    static constexpr OpSet kVectorMath{Ops::EXP, Ops::EXP2};
    static constexpr OpSet kCompare{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ}, kBoolLogic{Ops::AND, Ops::OR, Ops::XOR};
    if (u.get() == axis_) {
      std::vector<UOpRef> values;
      for (int64_t i = 0; i < lanes_; i++) values.push_back(UOp::const_(u->dtype, static_cast<double>(offset_ + i)));
      out = UOp::make(Ops::VECTORIZE, vec, std::move(values));
    } else if (vectorizable_dtype(u->dtype) && u->op == Ops::LOAD && contiguous(u->src[0])) {
      out = UOp::make(Ops::LOAD, vec, {first_lane(u->src[0])});
    } else if ((vectorizable_dtype(u->dtype) && kVectorAlu.has(u->op)) ||
               (kVectorMath.has(u->op) && scalar_f32(u->dtype)) || (kCompare.has(u->op) && scalar_f32(u->src[0]->dtype)) ||
               (kBoolLogic.has(u->op) && scalar_bool(u->dtype)) || (u->op == Ops::WHERE && scalar_f32(u->dtype))) {
      std::vector<UOpRef> src;
      for (const UOpRef& s : u->src) src.push_back(broadcast(value(s)));
      out = UOp::make(u->op, vec, std::move(src), u->arg);
    } else if (u->op == Ops::REDUCE && vector_reduce(u.get())) {
      std::vector<UOpRef> src{broadcast(value(u->src[0]))};
      src.insert(src.end(), u->src.begin() + 1, u->src.end());
      out = UOp::make(Ops::REDUCE, vec, std::move(src), u->arg);
    } else {
      std::vector<UOpRef> copies;
      for (int64_t i = 0; i < lanes_; i++) copies.push_back(lane(u, i));
      out = UOp::make(Ops::VECTORIZE, vec, std::move(copies));
    }
    return memo_[u.get()] = out;
  }

  UOpRef broadcast(const UOpRef& x) {
    if (x->dtype.count == lanes_) return x;
    return UOp::make(Ops::VECTORIZE, x->dtype.vec(static_cast<int>(lanes_)), std::vector<UOpRef>(lanes_, x));
  }

  // Lane i of `u`: u itself over lane i of each source.
  UOpRef lane(const UOpRef& u, int64_t i) {
    std::vector<UOpRef> src;
    for (const UOpRef& s : u->src) {
      if (!depends(s.get())) {
        src.push_back(s);
        continue;
      }
      UOpRef v = value(s);
      src.push_back(v->op == Ops::VECTORIZE ? v->src[i] : UOp::make(Ops::GEP, s->dtype, {v}, i));
    }
    return u->with_src(std::move(src));
  }

  // An INDEX into a buffer (not a register) whose address steps by exactly 1 along the axis and
  // whose gate does not depend on it: the lanes are neighbours in memory.
  bool contiguous(const UOpRef& index) {
    if (index->op != Ops::INDEX || index->src[0]->op != Ops::PARAM) return false;
    if (index->src.size() > 2 && depends(index->src[2].get())) return false;
    return linear_coefficient(index->src[1].get(), axis_) == 1;
  }
  UOpRef first_lane(const UOpRef& index) {
    return substitute(index, {{axis_, UOp::const_(axis_->dtype, static_cast<double>(offset_))}});
  }

  bool depends(const UOp* u) {
    if (auto it = depends_.find(u); it != depends_.end()) return it->second;
    bool d = u == axis_;
    for (const UOpRef& s : u->src) d = d || depends(s.get());
    return depends_[u] = d;
  }

  const UOp* axis_;
  int64_t offset_, lanes_;
  std::unordered_map<const UOp*, bool> depends_;
  std::unordered_map<const UOp*, UOpRef> memo_;
};

// The chunks of an axis of n: the widest power-of-two widths that fit (20: 16 + 4).
std::vector<std::pair<int64_t, int64_t>> chunks_of(int64_t n, int64_t max_lanes) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t offset = 0, width = max_lanes; offset < n; width /= 2)
    for (; width >= 1 && offset + width <= n; offset += width) out.push_back({offset, width});
  return out;
}

// The lanes of the reductions' vector accumulators, by the kernel's widest reduction.
struct UnrollCtx : RewriteCtx {
  int64_t max_lanes;
  explicit UnrollCtx(int64_t lanes) : max_lanes(lanes) {}
};

// A REDUCE over an UNROLL range → each chunk's lanes reduced in a vector accumulator, the chunks'
// totals combined.
UOpRef vectorize_unrolled(const UOpRef& reduce, int64_t max_lanes) {
  auto is_unroll = [](const UOpRef& r) { return r->op == Ops::RANGE && axis_type(r.get()) == AxisType::UNROLL; };
  auto it = std::find_if(reduce->src.begin() + 1, reduce->src.end(), is_unroll);
  if (it == reduce->src.end()) return {};
  const UOp* axis = it->get();
  if (!vector_reduce(reduce.get()))
    throw_error("vectorize unrolls: only float sums and maxima vectorize along a reduced axis, got ",
                op_name(reduce->arg_as<ReduceArg>().op), " of ", reduce->dtype.name());
  const Ops op = reduce->arg_as<ReduceArg>().op;
  UOpRef total;
  for (auto [offset, width] : chunks_of(static_cast<int64_t>(axis->src[0]->const_value()), max_lanes)) {
    UOpRef part = Vectorizer(axis, offset, width).reduce_lanes(reduce);
    total = total ? combine(op, total, part) : part;
  }
  return total;
}

}  // namespace

const PatternMatcher& pm_vectorize_unrolls() {
  static const PatternMatcher pm{{
      make_rule(UPat(Ops::REDUCE).named("red"), [](RewriteCtx* ctx, const Match& m) {
        return vectorize_unrolled(m["red"], ctx->as<UnrollCtx>().max_lanes);
      }),
  }};
  return pm;
}

std::unique_ptr<RewriteCtx> unroll_ctx(const UOpRef& sink, int vector_bytes) {
  int reduce_itemsize = 4;
  for (const UOp* u : sink->toposort())
    if (u->op == Ops::REDUCE) reduce_itemsize = std::max(reduce_itemsize, u->dtype.itemsize());
  return std::make_unique<UnrollCtx>(std::max(1, vector_bytes / reduce_itemsize));
}

UOpRef vectorize_axis(const UOpRef& statement, const UOp* axis, int64_t max_lanes) {
  const int64_t n = static_cast<int64_t>(axis->src[0]->const_value());
  std::vector<UOpRef> chunks;
  for (auto [offset, width] : chunks_of(n, max_lanes))
    chunks.push_back(width == 1 ? substitute(statement, {{axis, UOp::const_(axis->dtype, double(offset))}})
                                : Vectorizer(axis, offset, width).statement(statement));
  return chunks.size() == 1 ? chunks[0] : UOp::make(Ops::GROUP, dtypes::void_, std::move(chunks));
}

}  // namespace kiln::codegen
