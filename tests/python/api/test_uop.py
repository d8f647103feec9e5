"""The IR from Python (kiln.uop): hand-built UOps, user rewrite rules with Python functions,
graph_rewrite and simplify, checked by evaluating the expressions before and after for every value
of the loop variable (the rewrite must keep the value) and by the ops they end up with."""
import pytest
from kiln import KilnError, Tensor, dtypes
from kiln.uop import Ops, PatternMatcher, UOp, UPat, graph_rewrite, render_expr, simplify

def evaluate(u: UOp, x: int) -> int:
  """An int32 index expression's value with the range set to x (C semantics for // and %)."""
  if u.op == Ops.RANGE: return x
  if u.op == Ops.CONST: return int(float(u.arg))
  a, b = (evaluate(s, x) for s in u.src)
  return {Ops.ADD: lambda: a + b, Ops.MUL: lambda: a * b, Ops.SUB: lambda: a - b, Ops.SHL: lambda: a << b,
          Ops.IDIV: lambda: int(a / b), Ops.MOD: lambda: a - b * int(a / b)}[u.op]()

def ops_in(u: UOp) -> set:
  return {u.op} | set().union(*(ops_in(s) for s in u.src))

def test_hash_consing_and_building():
  x = UOp.range(10)
  assert x * 2 == x * 2 and (x * 2 + x * 2).src[0] == (x * 2 + x * 2).src[1]
  assert x.op == Ops.RANGE and x.dtype == dtypes.int32 and (x + 1).op == Ops.ADD
  assert UOp.const(dtypes.int32, 3).op == Ops.CONST

def test_user_rule_rewrites_and_keeps_the_value():
  x, two = UOp.range(100), UOp.const(dtypes.int32, 2)
  expr = x * two + x * two
  fired = []
  def to_shift(m):
    fired.append(m.root)
    return m["a"].alu(Ops.SHL, [UOp.const(dtypes.int32, 1)])
  pm = PatternMatcher([(UPat.op(Ops.ADD, [UPat.var("a", [dtypes.int32]), UPat.var("a", [dtypes.int32])]), to_shift)])
  out = graph_rewrite(expr, pm)
  assert fired == [expr] and Ops.SHL in ops_in(out) and Ops.ADD not in ops_in(out)
  assert all(evaluate(out, v) == evaluate(expr, v) for v in range(100))
  assert "<<" in render_expr(out)

def test_none_means_no_rewrite_and_rules_compose():
  x = UOp.range(50)
  never = PatternMatcher([(UPat.var("a") + UPat.var("b"), lambda m: None)])
  assert graph_rewrite(x + 3, never) == x + 3
  # a rule that moves constants left, plus kiln's simplifier folding (x*2)*1 + 0
  noisy = (x * 2) * 1 + 0
  simple = simplify(noisy)
  assert Ops.ADD not in ops_in(simple) and all(evaluate(simple, v) == evaluate(noisy, v) for v in range(50))
  assert len(never + never) == 2

def test_errors_in_a_rule_reach_python():
  def broken(m): raise ValueError("rule failed")
  with pytest.raises(ValueError, match="rule failed"):
    graph_rewrite(UOp.range(4) + 1, PatternMatcher([(UPat.var("a") + UPat.cvar("c"), broken)]))
  with pytest.raises(KilnError):
    UOp.range(4).alu(Ops.ADD, [])  # ADD needs two sources

def test_tensor_graph_and_kernel_ast_are_uops():
  t = (Tensor.ones(2, 3) * 3).sum(1)
  assert isinstance(t.uop, UOp) and t.uop.shape == (2,)
  (item,) = t.schedule()
  assert item.ast.op == Ops.SINK
