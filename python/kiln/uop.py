"""kiln's IR from Python, under tinygrad's names (tinygrad.uop.ops): UOp (hash-consed graph nodes;
Tensor.uop and ScheduleItem.ast are UOps), Ops, and the rewrite engine every compiler stage is
made of: UPat patterns, PatternMatcher rules (pattern, fn(match) -> UOp or None), graph_rewrite.

  x = UOp.range(100)
  pm = PatternMatcher([(UPat.var("a") + UPat.var("a"), lambda m: m["a"].alu(Ops.SHL, [UOp.const(dtypes.int32, 1)]))])
  graph_rewrite(x * 2 + x * 2, pm)   # (x*2) << 1
"""
from kiln._core import _kiln

UOp, Ops, UPat, PatternMatcher, Match = _kiln.UOp, _kiln.Ops, _kiln.UPat, _kiln.PatternMatcher, _kiln.Match
graph_rewrite, simplify, render_expr = _kiln.graph_rewrite, _kiln.simplify, _kiln.render_expr

__all__ = ["UOp", "Ops", "UPat", "PatternMatcher", "Match", "graph_rewrite", "simplify", "render_expr"]
