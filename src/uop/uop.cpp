#include "kiln/ir/uop.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "kiln/error.h"
#include "support/hash.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Args

bool ConstFloat::operator==(const ConstFloat& o) const {
  return std::bit_cast<uint64_t>(v) == std::bit_cast<uint64_t>(o.v);
}

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }
}  // namespace

size_t hash_arg(const Arg& a) {
  size_t h = a.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) h = mix(h, std::hash<int64_t>()(v));
        else if constexpr (std::is_same_v<T, ConstFloat>) h = mix(h, std::bit_cast<uint64_t>(v.v));
        else if constexpr (std::is_same_v<T, std::string>) h = mix(h, std::hash<std::string>()(v));
        else if constexpr (std::is_same_v<T, Shape>) for (int64_t x : v) h = mix(h, x);
        else if constexpr (std::is_same_v<T, Pairs>) for (auto [x, y] : v) h = mix(mix(h, x), y);
        else if constexpr (std::is_same_v<T, ReduceArg>) {
          h = mix(h, static_cast<size_t>(v.op));
          for (int64_t x : v.axes) h = mix(h, x);
        } else if constexpr (std::is_same_v<T, RangeArg>) h = mix(mix(h, v.id), static_cast<size_t>(v.type));
        else if constexpr (std::is_same_v<T, BufferArg>) h = mix(mix(h, v.id), v.size);
      },
      a);
  return h;
}

std::string_view axis_type_name(AxisType t) {
  switch (t) {
    case AxisType::LOOP: return "LOOP";
    case AxisType::THREAD: return "THREAD";
    case AxisType::REDUCE: return "REDUCE";
    case AxisType::UPCAST: return "UPCAST";
    case AxisType::UNROLL: return "UNROLL";
    case AxisType::LOCAL: return "LOCAL";
    case AxisType::GROUP_REDUCE: return "GROUP_REDUCE";
  }
  return "?";
}

char axis_type_letter(AxisType t) {
  switch (t) {
    case AxisType::LOOP: return 'L';
    case AxisType::THREAD: return 't';
    case AxisType::REDUCE: return 'R';
    case AxisType::UPCAST: return 'u';
    case AxisType::UNROLL: return 'r';
    case AxisType::LOCAL: return 'l';
    case AxisType::GROUP_REDUCE: return 'g';
  }
  return '?';
}

std::string shape_to_string(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); i++) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

std::string arg_to_string(const Arg& a) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) os << "None";
        else if constexpr (std::is_same_v<T, int64_t>) os << v;
        else if constexpr (std::is_same_v<T, ConstFloat>) {
          os.precision(9);
          os << v.v;
        } else if constexpr (std::is_same_v<T, std::string>) os << '"' << v << '"';
        else if constexpr (std::is_same_v<T, Shape>) os << shape_to_string(v);
        else if constexpr (std::is_same_v<T, Pairs>) {
          os << "(";
          for (size_t i = 0; i < v.size(); i++) os << (i ? ", " : "") << "(" << v[i].first << ", " << v[i].second << ")";
          os << ")";
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          os << "(Ops." << op_name(v.op);
          if (!v.axes.empty()) os << ", " << shape_to_string(v.axes);
          os << ")";
        } else if constexpr (std::is_same_v<T, RangeArg>) os << "(" << v.id << ", AxisType." << axis_type_name(v.type) << ")";
        else if constexpr (std::is_same_v<T, BufferArg>) os << "(id=" << v.id << ", size=" << v.size << ", " << v.device << ")";
      },
      a);
  return os.str();
}

std::string_view op_name(Ops op) {
  static constexpr std::string_view names[] = {
#define KILN_X(n) #n,
      KILN_OPS(KILN_X)
#undef KILN_X
  };
  return names[static_cast<int>(op)];
}

double reduce_identity(Ops op, DType dtype) {
  switch (op) {
    case Ops::ADD: return 0;
    case Ops::MUL: return 1;
    case Ops::MAX: return dtype.min_value();
    default: throw_error("reduce: ", op_name(op), " is not a reduce op (ADD, MUL or MAX)");
  }
}

std::vector<ReshapeGroup> reshape_groups(const Shape& in, const Shape& out) {
  std::vector<size_t> ins, outs;
  for (size_t k = 0; k < in.size(); k++)
    if (in[k] != 1) ins.push_back(k);
  for (size_t k = 0; k < out.size(); k++)
    if (out[k] != 1) outs.push_back(k);
  std::vector<ReshapeGroup> groups;
  size_t a = 0, b = 0;
  while (a < ins.size() && b < outs.size()) {
    ReshapeGroup g;
    int64_t pa = in[ins[a]], pb = out[outs[b]];
    g.in_axes.push_back(ins[a++]);
    g.out_axes.push_back(outs[b++]);
    while (pa != pb) {
      if (pa < pb) pa *= in[ins[a]], g.in_axes.push_back(ins[a++]);
      else pb *= out[outs[b]], g.out_axes.push_back(outs[b++]);
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

void check_shape(const Shape& s, const char* what) {
  double total = 1;
  for (int64_t d : s) {
    if (d < 0) throw_value_error(what, ": dimensions must be >= 0, got ", shape_to_string(s));
    total *= static_cast<double>(d);
  }
  if (total > static_cast<double>(kMaxNumel))
    throw_error(what, ": shape ", shape_to_string(s), " has ", total, " elements; at most ", kMaxNumel,
                " are supported (kernels index with int32)");
}

int64_t prod(const Shape& s) {
  int64_t p = 1;
  for (int64_t x : s) p *= x;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Interning

// The interned nodes: a hash set chained through the nodes themselves (UOp::next_interned_), so
// that making a node allocates nothing but the node. Used under InternTable's lock.
class NodeSet {
 public:
  // The node with `hash` that `same` accepts, or nullptr.
  template <class Same>
  const UOp* find(size_t hash, Same same) const {
    if (buckets_.empty()) return nullptr;
    for (const UOp* u = buckets_[bucket(hash)]; u; u = u->next_interned_)
      if (u->hash() == hash && same(u)) return u;
    return nullptr;
  }
  void insert(const UOp* u) {
    if (size_ >= buckets_.size()) rehash(std::max<size_t>(buckets_.size() * 2, 1024));
    const UOp*& head = buckets_[bucket(u->hash())];
    u->next_interned_ = head;
    head = u;
    size_++;
  }
  // Takes `u` out if it is in the set.
  void erase(const UOp* u) {
    if (buckets_.empty()) return;
    for (const UOp** link = &buckets_[bucket(u->hash())]; *link; link = &(*link)->next_interned_)
      if (*link == u) {
        *link = u->next_interned_;
        size_--;
        return;
      }
  }
  size_t size() const { return size_; }

 private:
  // Fibonacci hashing: the top bits of hash * 2^64/phi pick the bucket (a power of two).
  size_t bucket(size_t hash) const { return hash * 0x9e3779b97f4a7c15ULL >> shift_; }
  void rehash(size_t n) {
    std::vector<const UOp*> old = std::exchange(buckets_, std::vector<const UOp*>(n, nullptr));
    shift_ = 64 - std::countr_zero(n);
    for (const UOp* head : old)
      for (const UOp* u = head; u;) {
        const UOp* next = u->next_interned_;
        const UOp*& slot = buckets_[bucket(u->hash())];
        u->next_interned_ = slot;
        slot = u;
        u = next;
      }
  }
  std::vector<const UOp*> buckets_;
  int shift_ = 64;
  size_t size_ = 0;
};

class InternTable {
 public:
  static InternTable& get() {
    static InternTable* t = new InternTable();  // never destroyed: nodes may die during static teardown
    return *t;
  }

  UOpRef intern(Ops op, DType dtype, std::vector<UOpRef>&& src, Arg&& arg) {
    size_t h = mix(mix(static_cast<size_t>(op), std::hash<uint32_t>()(static_cast<uint32_t>(dtype.scalar) | dtype.count << 8 | dtype.ptr << 16)),
                   hash_arg(arg));
    for (const UOpRef& s : src) h = mix(h, std::hash<const void*>()(s.get()));
    {
      std::lock_guard lock(mu_);
      if (const UOp* found = set_.find(h, [&](const UOp* u) { return is(u, op, dtype, src, arg); })) {
        if (try_retain(found)) return UOpRef(found);
        set_.erase(found);  // dying: its release finds it gone and leaves the table alone
      }
    }
    // Build outside the lock: shape checks may throw, and they never touch the table.
    UOp* node = new UOp(op, dtype, std::move(src), std::move(arg), h);
    std::unique_ptr<UOp> guard(node);
    node->compute_shape();
    node->compute_range();
    std::lock_guard lock(mu_);
    auto same_as_node = [&](const UOp* u) { return is(u, node->op, node->dtype, node->src, node->arg); };
    if (const UOp* found = set_.find(h, same_as_node)) {  // another thread made the same node meanwhile
      if (try_retain(found)) return UOpRef(found);
      set_.erase(found);
    }
    set_.insert(node);
    guard.release();
    return UOpRef(node);
  }

  // Called with the node's count already at zero.
  void forget(const UOp* node) {
    std::lock_guard lock(mu_);
    set_.erase(node);
  }

  size_t size() {
    std::lock_guard lock(mu_);
    return set_.size();
  }

  std::array<std::vector<std::function<void(const UOp&)>>, kNumOps> hooks;  // indexed by op: every release looks them up

 private:
  // Whether `u` is the node (op, dtype, src, arg).
  static bool is(const UOp* u, Ops op, DType dtype, const std::vector<UOpRef>& src, const Arg& arg) {
    return u->op == op && u->dtype == dtype && u->src == src && u->arg == arg;
  }

  static bool try_retain(const UOp* u) {
    int64_t n = u->refs_.load(std::memory_order_relaxed);
    while (n > 0)
      if (u->refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) return true;
    return false;
  }

  std::mutex mu_;
  NodeSet set_;
};

void UOpRef::retain() const {
  if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
}

// Frees nodes iteratively: releasing a 100k-deep graph must not recurse 100k frames.
void UOpRef::release() {
  const UOp* p = std::exchange(p_, nullptr);
  if (!p || p->refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  thread_local std::vector<const UOp*> pending;
  thread_local bool draining = false;
  pending.push_back(p);
  if (draining) return;
  draining = true;
  InternTable& table = InternTable::get();
  while (!pending.empty()) {
    const UOp* node = pending.back();
    pending.pop_back();
    for (auto& hook : table.hooks[static_cast<size_t>(node->op)]) hook(*node);
    table.forget(node);
    // The sources are released here, one level at a time, instead of by ~UOp.
    for (const UOpRef& s : node->src) const_cast<UOpRef&>(s).release();
    delete node;
  }
  draining = false;
}

void on_uop_release(Ops op, std::function<void(const UOp&)> hook) {
  InternTable::get().hooks[static_cast<size_t>(op)].push_back(std::move(hook));
}
size_t live_uop_count() { return InternTable::get().size(); }

// ---------------------------------------------------------------------------------------------
// Construction

UOp::UOp(Ops op, DType dtype, std::vector<UOpRef> src, Arg arg, size_t hash)
    : op(op), dtype(dtype), src(std::move(src)), arg(std::move(arg)), hash_(hash), vmin_(0), vmax_(0) {}

UOpRef UOp::make(Ops op, DType dtype, std::vector<UOpRef> src, Arg arg) {
  for (const UOpRef& s : src)
    if (!s) throw_error("UOp::make(", op_name(op), "): a source is null");
  return InternTable::get().intern(op, dtype, std::move(src), std::move(arg));
}

UOpRef UOp::const_(DType dtype, double value) {
  DType s = dtype.base();
  if (s.is_float()) return make(Ops::CONST, dtype, {}, ConstFloat{value});
  if (s.is_bool()) return make(Ops::CONST, dtype, {}, int64_t{value != 0});
  if (std::isnan(value)) throw_error("const: NaN has no ", dtype.name(), " value");
  // Integers wrap like a C conversion to the dtype (through a 64-bit integer).
  int64_t iv = value >= 9.2233720368547758e18 ? static_cast<int64_t>(static_cast<uint64_t>(value))
                                               : static_cast<int64_t>(std::max(value, -9.2233720368547758e18));
  return const_int(dtype, iv);
}

UOpRef UOp::const_int(DType dtype, int64_t value) {
  DType s = dtype.base();
  if (s.is_float()) return make(Ops::CONST, dtype, {}, ConstFloat{static_cast<double>(value)});
  if (s.is_bool()) return make(Ops::CONST, dtype, {}, int64_t{value != 0});
  switch (s.scalar) {  // wrap like a C conversion to the dtype
    case ScalarType::Int8: value = static_cast<int8_t>(value); break;
    case ScalarType::Int16: value = static_cast<int16_t>(value); break;
    case ScalarType::Int32: value = static_cast<int32_t>(value); break;
    case ScalarType::UInt8: value = static_cast<uint8_t>(value); break;
    case ScalarType::UInt16: value = static_cast<uint16_t>(value); break;
    case ScalarType::UInt32: value = static_cast<uint32_t>(value); break;
    default: break;
  }
  return make(Ops::CONST, dtype, {}, value);
}

UOpRef UOp::sink(std::vector<UOpRef> src) { return make(Ops::SINK, dtypes::void_, std::move(src)); }

UOpRef UOp::ref() const {
  refs_.fetch_add(1, std::memory_order_relaxed);
  return UOpRef(this);
}

UOpRef UOp::with_src(std::vector<UOpRef> new_src) const { return make(op, dtype, std::move(new_src), arg); }
UOpRef UOp::with_arg(Arg new_arg) const { return make(op, dtype, src, std::move(new_arg)); }

UOpRef UOp::alu(Ops alu_op, std::vector<UOpRef> others) const {
  std::vector<UOpRef> s{ref()};
  for (auto& o : others) s.push_back(std::move(o));
  DType out = group::Comparison.has(alu_op) ? dtypes::bool_.vec(dtype.count) : dtype;
  if (alu_op == Ops::WHERE) out = s[1]->dtype;
  return make(alu_op, out, std::move(s));
}

UOpRef UOp::cast(DType to) const {
  if (to == dtype) return ref();
  return make(Ops::CAST, to, {ref()});
}

UOpRef UOp::const_like(double value) const { return const_(dtype, value); }

double UOp::const_value() const {
  if (op != Ops::CONST) throw_error("const_value: expected a CONST, got ", op_name(op));
  if (auto* f = std::get_if<ConstFloat>(&arg)) return f->v;
  int64_t v = std::get<int64_t>(arg);
  if (dtype.scalar == ScalarType::UInt64) return static_cast<double>(static_cast<uint64_t>(v));
  return static_cast<double>(v);
}

const Shape& UOp::shape_or_throw() const {
  if (!shape_) throw_error(op_name(op), " has no shape: it is not a tensor-graph node");
  return *shape_;
}

// Tensor-graph shapes. The Tensor layer validates user input first with friendlier messages; these
// checks keep hand-built graphs honest too.
void UOp::compute_shape() {
  compute_shape_unchecked();
  // Index math is int32. Only buffers and reshapes flatten indices, so only they are limited: a
  // broadcast intermediate (matmul's n x m x k product) may be larger, it is never materialized,
  // and a reshape flattens each of its axis groups on its own.
  if (shape_ && op == Ops::BUFFER) check_shape(*shape_, "BUFFER");
  if (shape_ && op == Ops::RESHAPE && prod(src[0]->shape_or_throw()) != 0)
    for (const ReshapeGroup& g : reshape_groups(src[0]->shape_or_throw(), *shape_)) {
      Shape merged;
      for (size_t a : g.out_axes) merged.push_back((*shape_)[a]);
      check_shape(merged, "RESHAPE");
    }
}

void UOp::compute_shape_unchecked() {
  auto src_shape = [&](size_t i) -> const Shape& { return src.at(i)->shape_or_throw(); };
  switch (op) {
    case Ops::BUFFER: shape_ = Shape{arg_as<BufferArg>().size}; return;
    case Ops::CONST: shape_ = Shape{}; return;
    case Ops::RESHAPE: {
      const Shape& to = arg_as<Shape>();
      if (prod(to) != prod(src_shape(0)))
        throw_error("RESHAPE: cannot reshape ", shape_to_string(src_shape(0)), " to ", shape_to_string(to));
      shape_ = to;
      return;
    }
    case Ops::EXPAND: {
      const Shape& to = arg_as<Shape>();
      const Shape& from = src_shape(0);
      if (to.size() != from.size()) throw_error("EXPAND: rank mismatch ", shape_to_string(from), " -> ", shape_to_string(to));
      for (size_t i = 0; i < to.size(); i++)
        if (from[i] != to[i] && from[i] != 1)
          throw_error("EXPAND: cannot expand ", shape_to_string(from), " to ", shape_to_string(to));
      shape_ = to;
      return;
    }
    case Ops::PERMUTE: {
      const Shape& perm = arg_as<Shape>();
      const Shape& from = src_shape(0);
      Shape out;
      std::vector<bool> seen(from.size(), false);
      if (perm.size() != from.size()) throw_error("PERMUTE: expected ", from.size(), " axes, got ", perm.size());
      for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(from.size()) || seen[p])
          throw_error("PERMUTE: ", shape_to_string(perm), " is not a permutation of ", from.size(), " axes");
        seen[p] = true;
        out.push_back(from[p]);
      }
      shape_ = out;
      return;
    }
    case Ops::PAD:
    case Ops::SHRINK: {
      const Pairs& p = arg_as<Pairs>();
      const Shape& from = src_shape(0);
      if (p.size() != from.size()) throw_error(op_name(op), ": expected ", from.size(), " pairs, got ", p.size());
      Shape out;
      for (size_t i = 0; i < p.size(); i++) {
        if (op == Ops::PAD) {
          if (p[i].first < 0 || p[i].second < 0) throw_error("PAD: negative padding on axis ", i);
          out.push_back(from[i] + p[i].first + p[i].second);
        } else {
          if (p[i].first < 0 || p[i].second > from[i] || p[i].first > p[i].second)
            throw_error("SHRINK: [", p[i].first, ", ", p[i].second, ") is out of bounds for axis ", i, " of size ", from[i]);
          out.push_back(p[i].second - p[i].first);
        }
      }
      shape_ = out;
      return;
    }
    case Ops::REDUCE: {
      const auto& r = arg_as<ReduceArg>();
      if (src.size() != 1 || !src[0]->shape()) return;  // kernel-form REDUCE: value + ranges
      Shape out = src_shape(0);
      for (int64_t a : r.axes) {
        if (a < 0 || a >= static_cast<int64_t>(out.size())) throw_error("REDUCE: axis ", a, " out of range");
        out[a] = 1;
      }
      shape_ = out;
      return;
    }
    case Ops::GATHER: {  // out[..i..] = src[..index[..i..] at axis..]: the index's shape, else the source's
      const Shape &from = src_shape(0), &index = src_shape(1);
      const int64_t axis = arg_as<int64_t>();
      if (index.size() != from.size() || axis < 0 || axis >= static_cast<int64_t>(from.size()))
        throw_error("GATHER: axis ", axis, " of ", shape_to_string(from), " indexed by ", shape_to_string(index));
      for (size_t d = 0; d < from.size(); d++)
        if (static_cast<int64_t>(d) != axis && index[d] != from[d])
          throw_error("GATHER: index ", shape_to_string(index), " differs from the source ", shape_to_string(from),
                      " outside axis ", axis);
      if (!src[1]->dtype.is_int()) throw_error("GATHER: the index must be an integer, got ", src[1]->dtype.name());
      shape_ = index;
      return;
    }
    case Ops::FLIP: case Ops::CONTIGUOUS: case Ops::DETACH: case Ops::COPY:
      if (!src.empty() && src[0]->shape()) shape_ = src[0]->shape();
      return;
    default: break;
  }
  if (group::Elementwise.has(op) && !src.empty()) {
    for (const UOpRef& s : src)
      if (!s->shape()) return;
    const Shape& first = *src.back()->shape();  // WHERE's condition may be a scalar CONST: use the last
    for (const UOpRef& s : src)
      if (*s->shape() != first && !s->shape()->empty())
        throw_error(op_name(op), ": source shapes differ: ", shape_to_string(*s->shape()), " vs ", shape_to_string(first));
    shape_ = first;
  }
}

// Integer value ranges, the facts the index simplifier reasons with.
void UOp::compute_range() {
  const double dmin = dtype.base().min_value(), dmax = dtype.base().max_value();
  vmin_ = dmin;
  vmax_ = dmax;
  if (dtype.is_float() || dtype.ptr || dtype.scalar == ScalarType::Void) return;
  // An interval that leaves the dtype may have wrapped around: then nothing is known beyond the
  // dtype's own range.
  auto clamp = [&](double lo, double hi) {
    if (lo >= dmin && hi <= dmax && lo <= hi) vmin_ = lo, vmax_ = hi;
  };
  auto s = [&](size_t i) { return src.at(i).get(); };
  switch (op) {
    case Ops::CONST: vmin_ = vmax_ = const_value(); return;
    case Ops::RANGE: case Ops::SPECIAL: clamp(0, s(0)->vmax() - 1); return;
    case Ops::ADD: clamp(s(0)->vmin() + s(1)->vmin(), s(0)->vmax() + s(1)->vmax()); return;
    case Ops::SUB: clamp(s(0)->vmin() - s(1)->vmax(), s(0)->vmax() - s(1)->vmin()); return;
    case Ops::NEG: clamp(-s(0)->vmax(), -s(0)->vmin()); return;
    case Ops::MUL: case Ops::IDIV: {
      const UOp *a = s(0), *b = s(1);
      if (op == Ops::IDIV && !(b->vmin() > 0 || b->vmax() < 0)) return;  // divisor may be 0
      double c[4] = {a->vmin() * b->vmin(), a->vmin() * b->vmax(), a->vmax() * b->vmin(), a->vmax() * b->vmax()};
      if (op == Ops::IDIV)
        c[0] = std::trunc(a->vmin() / b->vmin()), c[1] = std::trunc(a->vmin() / b->vmax()),
        c[2] = std::trunc(a->vmax() / b->vmin()), c[3] = std::trunc(a->vmax() / b->vmax());
      for (double& x : c) if (std::isnan(x)) return;
      clamp(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
      return;
    }
    case Ops::MOD: {
      const UOp *a = s(0), *b = s(1);
      if (b->vmin() <= 0) return;
      double m = b->vmax() - 1;
      if (a->vmin() >= 0) clamp(0, std::min(a->vmax(), m));
      else clamp(-m, m);
      return;
    }
    case Ops::MAX: clamp(std::max(s(0)->vmin(), s(1)->vmin()), std::max(s(0)->vmax(), s(1)->vmax())); return;
    case Ops::WHERE: clamp(std::min(s(1)->vmin(), s(2)->vmin()), std::max(s(1)->vmax(), s(2)->vmax())); return;
    case Ops::CMPLT:
      if (s(0)->vmax() < s(1)->vmin()) clamp(1, 1);
      else if (s(0)->vmin() >= s(1)->vmax()) clamp(0, 0);
      return;
    case Ops::AND:
      if (dtype.is_bool()) clamp(s(0)->vmin() * s(1)->vmin(), std::min(s(0)->vmax(), s(1)->vmax()));
      else if (s(0)->vmin() >= 0 && s(1)->vmin() >= 0) clamp(0, std::min(s(0)->vmax(), s(1)->vmax()));
      return;
    case Ops::CAST:
      if (s(0)->dtype.is_float()) return;
      if (dtype.is_bool()) {  // nonzero is true
        bool never_zero = s(0)->vmin() > 0 || s(0)->vmax() < 0, always_zero = s(0)->vmin() == 0 && s(0)->vmax() == 0;
        clamp(never_zero ? 1 : 0, always_zero ? 0 : 1);
      } else {
        clamp(s(0)->vmin(), s(0)->vmax());
      }
      return;
    default: return;
  }
}

// ---------------------------------------------------------------------------------------------
// Walking and keys

std::vector<const UOp*> UOp::toposort() const {
  std::vector<const UOp*> order;
  std::unordered_set<const UOp*> visited;
  std::vector<std::pair<const UOp*, size_t>> stack{{this, 0}};
  visited.insert(this);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->src.size()) {
      const UOp* child = node->src[next++].get();
      if (visited.insert(child).second) stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

std::string UOp::key() const {
  std::unordered_map<const UOp*, size_t> index;
  std::ostringstream os;
  for (const UOp* u : toposort()) {
    index[u] = index.size();
    os << op_name(u->op) << ' ' << u->dtype.name() << ' ' << arg_to_string(u->arg);
    for (const UOpRef& s : u->src) os << ' ' << index.at(s.get());
    os << '\n';
  }
  return runtime::content_hash(os.str());
}

// ---------------------------------------------------------------------------------------------
// Index-math builders

namespace {
UOpRef int_const_for(const UOpRef& like, int64_t v) { return UOp::const_(like->dtype, static_cast<double>(v)); }
}  // namespace

UOpRef operator+(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::ADD, {b}); }
UOpRef operator-(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::SUB, {b}); }
UOpRef operator*(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::MUL, {b}); }
UOpRef operator/(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::IDIV, {b}); }
UOpRef operator%(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::MOD, {b}); }
UOpRef operator<(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::CMPLT, {b}); }
UOpRef operator&(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::AND, {b}); }
UOpRef operator+(const UOpRef& a, int64_t b) { return a + int_const_for(a, b); }
UOpRef operator-(const UOpRef& a, int64_t b) { return a - int_const_for(a, b); }
UOpRef operator*(const UOpRef& a, int64_t b) { return a * int_const_for(a, b); }
UOpRef operator/(const UOpRef& a, int64_t b) { return a / int_const_for(a, b); }
UOpRef operator%(const UOpRef& a, int64_t b) { return a % int_const_for(a, b); }
UOpRef operator<(const UOpRef& a, int64_t b) { return a < int_const_for(a, b); }

}  // namespace kiln
