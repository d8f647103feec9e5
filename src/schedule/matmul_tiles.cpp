// Matmul tiles: a matmul in the tensor graph is the same on every device, a broadcast product summed
// over k (Tensor::matmul):
//   RESHAPE(REDUCE_ADD(MUL(EXPAND(RESHAPE(a, (..., n, 1, k))), EXPAND(RESHAPE(PERMUTE(b), (..., 1, m, k))))))
// (narrow dtypes accumulate wider: CAST(RESHAPE(REDUCE_ADD(CAST(MUL(...))))); bools multiply as AND).
// On a device with SIMD vectors, codegen/heuristics/ compute it in register tiles; two copies made
// here, from the device's Target, help those tiles:
// - Tile padding: the tiles cover rows in blocks of up to 8 and columns in 16-lane vectors, in sizes
//   that divide the matrix. Sizes without such divisors (257 is prime, 500 has only 4) leave scalar or
//   narrow-vector tiles, a fraction of the vector units' speed. Above kPadMinWork, such an operand is
//   copied zero-padded to whole tiles and the result, stored whole, is cut back: the copies cost
//   O(n^2) of the O(n^3), the padding a few percent more multiplies.
// - Tile rows: a tile of r rows keeps 2r independent sums. Two FMA units with a 4-cycle latency hold
//   8 in flight: with no more than that, any load's delay stalls them. Where no divisor of the rows
//   up to the target's most (AVX2: 6) gives more (2048 rows on AVX2: tiles of 4), large matmuls pad
//   the rows to a multiple of the most too.
// - Panel copy: a tile reads two vectors of the right operand's columns per step along k. In a
//   row-major (k, m) matrix those steps are a row apart, so every step loads new lines that the L1
//   cache maps to the same few sets. A copy of the matrix in panels of the tile's columns, each panel
//   contiguous (one pass over it), lets a tile walk down its panel instead. With AVX-512 (8x32 tiles)
//   the copy pays from matmul 2048 on, not at 1024 and below; AVX2's 4x16 tile loads twice the panel
//   bytes per multiply, so there it pays from 512.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/ir/pattern_matcher.h"
#include "schedule/devices.h"
#include "schedule/schedule.h"
#include "support/env.h"

namespace kiln::schedule {
namespace {

constexpr int64_t kTileRows = 8, kTileColumns = 16, kPadMinWork = 128 * 128 * 128;
constexpr int64_t kFmaPipelineSums = 8, kPadRowsMinWork = 512 * 512 * 512;

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Columns per panel: the two vectors of columns a tile reads per step (0 without vectors).
int64_t panel_columns(const Target& target, DType dtype) {
  return 2 * target.vector_bytes / std::max(1, dtype.itemsize());
}
// The rows codegen's register tile takes of n: the largest divisor of n up to `most`.
int64_t tile_rows_of(int64_t n, int64_t most) {
  for (int64_t r = std::min(most, n); r > 1; r--)
    if (n % r == 0) return r;
  return 1;
}

// The right operand's size (k * m) from which its panel copy pays.
int64_t panel_min_elements(const Target& target) { return target.vector_registers >= 32 ? 2048 * 2048 : 512 * 512; }

// Whether `to` is `from` with a 1 inserted `from_end` axes from the end (unsqueeze(-from_end)).
bool inserts_one(const Shape& from, const Shape& to, size_t from_end) {
  if (to.size() != from.size() + 1 || from.size() + 1 < from_end) return false;
  const size_t at = to.size() - from_end;
  Shape without = to;
  without.erase(without.begin() + static_cast<std::ptrdiff_t>(at));
  return to[at] == 1 && without == from;
}

bool swaps_last_two(const UOp* permute) {
  const Shape& perm = permute->arg_as<Shape>();
  for (size_t i = 0; i < perm.size(); i++) {
    const size_t want = i + 2 < perm.size() ? i : 2 * perm.size() - 3 - i;
    if (perm[i] != static_cast<int64_t>(want)) return false;
  }
  return perm.size() >= 2;
}

// One side of the product: the matmul's operand and the views and casts over it, lowest first.
struct Operand {
  UOpRef base;
  std::vector<UOpRef> chain;
};

// The side from `top` down through views and casts to the unsqueeze that starts it (a RESHAPE that
// `is_bottom` accepts), and below that `transposed` operands' PERMUTE.
template <class IsBottom>
std::optional<Operand> operand_of(const UOpRef& top, bool transposed, IsBottom is_bottom) {
  std::vector<UOpRef> chain;
  for (UOpRef u = top; u->op == Ops::RESHAPE || u->op == Ops::EXPAND || u->op == Ops::CAST; u = u->src[0]) {
    chain.push_back(u);
    if (u->op != Ops::RESHAPE || !is_bottom(u.get())) continue;
    UOpRef base = u->src[0];
    if (transposed) chain.push_back(base), base = base->src[0];
    std::reverse(chain.begin(), chain.end());
    return Operand{base, chain};
  }
  return std::nullopt;
}

// a.unsqueeze(-2): (..., n, k) -> (..., n, 1, k)
std::optional<Operand> left_operand(const UOpRef& top) {
  return operand_of(top, false, [](const UOp* u) {
    return inserts_one(u->src[0]->shape_or_throw(), u->shape_or_throw(), 2);
  });
}
// b.transpose(-1, -2).unsqueeze(-3): (..., k, m) -> (..., m, k) -> (..., 1, m, k)
std::optional<Operand> right_operand(const UOpRef& top) {
  return operand_of(top, true, [](const UOp* u) {
    const UOp* p = u->src[0].get();
    return p->op == Ops::PERMUTE && swaps_last_two(p) && inserts_one(p->shape_or_throw(), u->shape_or_throw(), 3);
  });
}

// The side rebuilt over `base` (the operand, padded to n rows and m columns): every reshape and
// expand above the unsqueeze has the shape (..., n or 1, m or 1, k).
UOpRef replay(UOpRef base, const Operand& side, int64_t n, int64_t m) {
  for (const UOpRef& u : side.chain) {
    if (u->op != Ops::RESHAPE && u->op != Ops::EXPAND) {
      base = u->with_src({base});
      continue;
    }
    Shape s = u->arg_as<Shape>();
    const size_t r = s.size();
    if (s[r - 3] != 1) s[r - 3] = n;
    if (s[r - 2] != 1) s[r - 2] = m;
    base = UOp::make(u->op, u->dtype, {base}, s);
  }
  return base;
}

// `x` zero-padded to `size` along its axis `from_end` axes from the end, as a stored copy.
UOpRef padded_copy(const UOpRef& x, size_t from_end, int64_t size) {
  const Shape& shape = x->shape_or_throw();
  Pairs pads(shape.size(), {0, 0});
  pads[shape.size() - from_end].second = size - shape[shape.size() - from_end];
  return UOp::make(Ops::CONTIGUOUS, x->dtype, {UOp::make(Ops::PAD, x->dtype, {x}, pads)});
}

// A (k, m) matrix read from a copy stored in panels of `panel` columns: (m / panel, k, panel).
UOpRef panel_copy(const UOpRef& b, int64_t panel) {
  const int64_t k = b->shape_or_throw()[0], m = b->shape_or_throw()[1];
  const Shape swap{1, 0, 2};
  UOpRef panels = UOp::make(Ops::RESHAPE, b->dtype, {b}, Shape{k, m / panel, panel});
  panels = UOp::make(Ops::CONTIGUOUS, b->dtype, {UOp::make(Ops::PERMUTE, b->dtype, {panels}, swap)});
  return UOp::make(Ops::RESHAPE, b->dtype, {UOp::make(Ops::PERMUTE, b->dtype, {panels}, swap)}, Shape{k, m});
}

struct TileCtx : RewriteCtx {
  const TargetOf* target_of;
  const std::string* device_of_constants;
  std::unordered_set<const UOp*> tiled;  // sums this pass built: not again
  Target target(const UOp* u) { return (*target_of)(device_of(u, *device_of_constants)); }
};

// `out` (the matmul's (..., n, m) result: RESHAPE or CAST over the REDUCE `sum`) in the tiles of its
// device, or null when it is not a matmul or needs no copy.
UOpRef tile_matmul(TileCtx& ctx, const UOpRef& out, const UOpRef& sum) {
  if (ctx.tiled.count(sum.get())) return {};
  const Shape& full = sum->src[0]->shape_or_throw();  // (..., n, m, k)
  const size_t rank = full.size();
  const ReduceArg& arg = sum->arg_as<ReduceArg>();
  if (rank < 3 || arg.op != Ops::ADD || arg.axes != Shape{static_cast<int64_t>(rank) - 1}) return {};
  const UOpRef& product = sum->src[0]->op == Ops::CAST ? sum->src[0]->src[0] : sum->src[0];
  const std::optional<Operand> lhs = left_operand(product->src[0]), rhs = right_operand(product->src[1]);
  if (!lhs || !rhs) return {};
  const int64_t n = full[rank - 3], m = full[rank - 2], k = full[rank - 1];
  const Target target = ctx.target(sum.get());
  UOpRef a = lhs->base, b = rhs->base;
  int64_t n_tiled = n, m_tiled = m;
  std::vector<std::string> notes;  // what was done, for DEBUG=3
  if (target.vector_bytes > 0 && n * m * k >= kPadMinWork) {
    if (n >= kTileRows && n % kTileRows != 0) n_tiled = round_up(n, kTileRows);
    const int64_t most = target.matmul_tile_rows;
    if (n * m * k >= kPadRowsMinWork && most > 0 && 2 * tile_rows_of(n_tiled, most) <= kFmaPipelineSums)
      n_tiled = round_up(n, most);
    if (n_tiled != n) a = padded_copy(a, 2, n_tiled);
    if (m >= kTileColumns && m % kTileColumns != 0) m_tiled = round_up(m, kTileColumns), b = padded_copy(b, 1, m_tiled);
    if (n_tiled != n || m_tiled != m)
      notes.push_back("tile padding to " + std::to_string(n_tiled) + "x" + std::to_string(m_tiled));
  }
  const int64_t panel = panel_columns(target, b->dtype);
  const bool batched = b->shape_or_throw().size() > 2;  // read as it is
  if (!batched && panel >= 8 && k * m_tiled >= panel_min_elements(target) && m_tiled % panel == 0) {
    b = panel_copy(b, panel);
    notes.push_back("panel copy of the right operand in " + std::to_string(panel) + "-column panels");
  }
  if (notes.empty()) return {};
  if (env::debug_level() >= 3)
    fprintf(stderr, "matmul %lldx%lldx%lld: %s\n", (long long)n, (long long)k, (long long)m,
            (notes[0] + (notes.size() > 1 ? ", " + notes[1] : "")).c_str());
  UOpRef mul = product->with_src({replay(a, *lhs, n_tiled, m_tiled), replay(b, *rhs, n_tiled, m_tiled)});
  UOpRef tiled_sum = sum->with_src({sum->src[0]->op == Ops::CAST ? sum->src[0]->with_src({mul}) : mul});
  ctx.tiled.insert(tiled_sum.get());
  Shape shape = out->shape_or_throw();
  shape[rank - 3] = n_tiled, shape[rank - 2] = m_tiled;
  UOpRef result = UOp::make(Ops::RESHAPE, sum->dtype, {tiled_sum}, shape);
  if (out->op == Ops::CAST) result = out->with_src({result});
  if (n_tiled == n && m_tiled == m) return result;
  // stored whole: a cut taken before that would shrink the kernel's loops back to n and m
  Pairs bounds;
  for (int64_t d : shape) bounds.push_back({0, d});
  bounds[rank - 3].second = n, bounds[rank - 2].second = m;
  return UOp::make(Ops::SHRINK, result->dtype, {UOp::make(Ops::CONTIGUOUS, result->dtype, {result})}, bounds);
}

const PatternMatcher& tile_rules() {
  static const UPat product = UPat({Ops::MUL, Ops::AND}, {UPat(), UPat()});  // bools multiply as AND
  static const PatternMatcher pm{{
      // summed in the product's dtype
      make_rule(UPat(Ops::RESHAPE, {UPat(Ops::REDUCE, {product}).named("sum")}).named("out"),
                [](RewriteCtx* ctx, const Match& m) { return tile_matmul(ctx->as<TileCtx>(), m["out"], m["sum"]); }),
      // summed wider (16-bit floats, small ints), cast back
      make_rule(UPat(Ops::CAST, {UPat(Ops::RESHAPE, {UPat(Ops::REDUCE, {UPat(Ops::CAST, {product})}).named("sum")})})
                    .named("out"),
                [](RewriteCtx* ctx, const Match& m) { return tile_matmul(ctx->as<TileCtx>(), m["out"], m["sum"]); }),
  }};
  return pm;
}

}  // namespace

UOpRef tile_matmuls(const UOpRef& sink, const TargetOf& target_of, const std::string& device_of_constants,
                    std::unordered_map<const UOp*, UOpRef>& versions) {
  TileCtx ctx;
  ctx.target_of = &target_of;
  ctx.device_of_constants = &device_of_constants;
  const std::unordered_map<const UOp*, UOpRef> tiled =
      graph_rewrite_map(sink, tile_rules(), {&ctx, false, "matmul tiles"});
  // the nodes inside a rewritten matmul (its product, its sum) leave the graph: they have no version
  return follow_rewrite(sink, tiled, !ctx.tiled.empty(), versions);
}

}  // namespace kiln::schedule
