#include "codegen/heuristics/analysis.h"

#include <algorithm>
#include <cstdlib>

#include "codegen/opt.h"

namespace kiln::codegen::heuristics {

int64_t upcast_amount(int64_t n, int64_t cap) {
  for (int64_t a = cap; a >= 2; a /= 2)
    if (a <= n && n % a == 0) return a;
  for (int64_t a = std::min(cap, n); a >= 2; a--)
    if (n % a == 0) return a;
  return 0;
}

int64_t power_of_two_divisor(int64_t n, int64_t cap) {
  int64_t a = 1;
  while (a * 2 <= cap && n % (a * 2) == 0) a *= 2;
  return a >= 2 ? a : 0;
}

const UOp* address(const UOp* load) { return load->src[0]->src[1].get(); }

bool address_reads(const UOp* load, const UOp* r) {
  const auto topo = address(load)->toposort();
  return std::find(topo.begin(), topo.end(), r) != topo.end();
}

std::vector<const UOp*> loads_in_reduction(const UOpRef& ast) {
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::LOAD) continue;
    const auto topo = address(u)->toposort();
    if (std::any_of(topo.begin(), topo.end(),
                    [](const UOp* r) { return r->op == Ops::RANGE && axis_type(r) == AxisType::REDUCE; }))
      loads.push_back(u);
  }
  return loads;
}

std::unordered_map<const UOp*, std::vector<bool>> load_dependence(const UOpRef& ast, size_t& n_loads) {
  std::unordered_map<const UOp*, std::vector<bool>> out;
  std::vector<const UOp*> loads = loads_in_reduction(ast);
  n_loads = loads.size();
  for (size_t i = 0; i < loads.size(); i++)
    for (const UOp* u : address(loads[i])->toposort())
      if (u->op == Ops::RANGE) {
        auto& deps = out[u];
        deps.resize(loads.size(), false);
        deps[i] = true;
      }
  return out;
}

bool gathers_along(const UOpRef& ast, const UOp* r) {
  const auto loads = loads_in_reduction(ast);
  return std::any_of(loads.begin(), loads.end(),
                     [&](const UOp* l) { return address_reads(l, r) && linear_coefficient(address(l), r) != 1; });
}

bool reads_neighbours(const UOpRef& ast, const UOp* r) {
  const auto loads = loads_in_reduction(ast);
  return std::any_of(loads.begin(), loads.end(), [&](const UOp* l) { return linear_coefficient(address(l), r) == 1; });
}

std::unordered_set<const UOp*> gated_ranges(const UOpRef& ast) {
  std::unordered_set<const UOp*> gated;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::INDEX && u->src.size() > 2)
      for (const UOp* g : u->src[2]->toposort())
        if (g->op == Ops::RANGE) gated.insert(g);
  return gated;
}

int64_t vector_lanes(const UOpRef& ast, const UOp* r, int vector_bytes) {
  int itemsize = 0;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::STORE) {
      if (linear_coefficient(u->src[0]->src[1].get(), r) != 1) return 0;
      itemsize = std::max(itemsize, u->src[1]->dtype.itemsize());
    }
  return itemsize ? vector_bytes / itemsize : 0;
}

int64_t chunk_count(int64_t n, int64_t lanes) {
  int64_t count = 0;
  for (int64_t width = lanes; n > 0; width /= 2)
    for (; width >= 1 && n >= width; n -= width) count++;
  return count;
}

// Three quarters of the vector registers (the loads need the rest). AVX-512 has 32 (24
// accumulators: up to a 12x32 matmul tile), AVX2 and SSE 16 (12: a 6x16 tile; an 8x16 tile spills).
int64_t max_vector_accumulators(const Target& target) { return target.vector_registers * 3 / 4; }
// Each accumulator's update computing an inline exp (c_math.cpp) keeps ~5 live vectors, beside
// ~14 constants: one accumulator per 8 registers, so that a softmax's exp-and-sum does not spill
// (4 on AVX-512, 2 on AVX2).
int64_t max_vector_accumulators_with_exp(const Target& target) { return std::max(1, target.vector_registers / 8); }

bool reduces_an_exp(const UOpRef& ast) {
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::REDUCE)
      for (const UOp* v : u->src[0]->toposort())
        if (v->op == Ops::EXP || v->op == Ops::EXP2) return true;
  return false;
}

const UOp* reduce_vector_axis(const UOpRef& ast, const UOp* only) {
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort()) {
    const bool vector_op = u->op == Ops::REDUCE && (u->arg_as<ReduceArg>().op == Ops::ADD || u->arg_as<ReduceArg>().op == Ops::MAX);
    if (u->op == Ops::REDUCE && (!vector_op || (u->dtype.scalar != ScalarType::Float32 && u->dtype.scalar != ScalarType::Float64)))
      return nullptr;
    if (u->op == Ops::LOAD) loads.push_back(u);
  }
  const auto ranges = ranges_of(ast);
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    if (axis_type(*it) != AxisType::REDUCE) continue;
    if (only && !reduces_over(only, *it)) continue;
    bool moves = false, contiguous = true;
    for (const UOp* load : loads) {
      auto c = linear_coefficient(address(load), *it);
      const UOp* index = load->src[0].get();
      if (index->src.size() > 2 && linear_coefficient(index->src[2].get(), *it) != 0) contiguous = false;
      if (c == 1) moves = true;
      else if (c != 0) contiguous = false;
    }
    if (moves && contiguous) return *it;
  }
  return nullptr;
}

std::unordered_set<const UOp*> misaligned_with(const UOpRef& ast, const UOp* unroll, int64_t lanes) {
  std::unordered_set<const UOp*> out;
  for (const UOp* load : loads_in_reduction(ast)) {
    if (linear_coefficient(address(load), unroll) != 1) continue;
    for (const UOp* r : ranges_of(ast)) {
      auto c = linear_coefficient(address(load), r);
      if (r != unroll && c && *c != 0 && std::abs(*c) < lanes) out.insert(r);
    }
  }
  return out;
}

bool broadcasts_a_reduction(const UOpRef& ast) {
  const auto ranges = ranges_of(ast);
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::REDUCE) continue;
    const auto below = ranges_below(u);
    for (const UOp* r : ranges)
      if (axis_type(r) == AxisType::LOOP && !below.count(r)) return true;
  }
  return false;
}

}  // namespace kiln::codegen::heuristics

namespace kiln::codegen {

int64_t matmul_tile_rows(int vector_registers) {
  return heuristics::max_vector_accumulators(Target{.renderer = nullptr, .vector_registers = vector_registers}) / 2;
}

}  // namespace kiln::codegen
