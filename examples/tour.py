#!/usr/bin/env python3
"""A tour of kiln from Python, in five stops: laziness, the schedule, DEBUG levels, the generated
code, and a rewrite rule of your own. Each stop prints what it shows and checks it (the script
fails if kiln stops behaving as described, so ctest runs it as a smoke test).

  PYTHONPATH=python:build/release/python /usr/bin/python3 examples/tour.py
"""
import numpy as np
from kiln import Context, GlobalCounters, Tensor, dtypes
from kiln.uop import Ops, PatternMatcher, UOp, UPat, graph_rewrite, render_expr, simplify

def stop(title: str): print(f"\n===== {title}")

# 1. Laziness: operations build a graph of UOps; nothing runs until the data is needed.
stop("1. laziness: a graph, not a result")
a = Tensor([1.0, 2.0, 3.0, 4.0])
b = Tensor([10.0, 20.0, 30.0, 40.0])
c = ((a + b) * 2).relu().sum()
GlobalCounters.reset()
print(f"c = ((a + b) * 2).relu().sum() is {c}; kernels run so far: {GlobalCounters.kernel_count}")
print("its graph (Tensor.uop; one line per node, sources by number):")
print(c.uop)
assert GlobalCounters.kernel_count == 0 and " REDUCE " in repr(c.uop)

# 2. The schedule: the kernels realize() would run. The elementwise ops fuse into the reduction's
# kernel, so the whole expression is one kernel.
stop("2. schedule(): what realize() would run")
items = c.schedule()
for item in items: print(f"kernel {item.name}: {len(item.buffers)} buffers")
assert len(items) == 1

# 3. DEBUG levels: 2 prints a line per kernel run, 4 the generated code (C on the CPU).
stop("3. DEBUG=2: one line per kernel (name, time, GFLOP/s, GB/s)")
with Context(DEBUG=2): c.realize()
assert c.item() == 2 * sum([11.0, 22.0, 33.0, 44.0])
print(f"c = {c.item()}, after {GlobalCounters.kernel_count} kernel")

stop("4. DEBUG=4: the generated code")
x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
with Context(DEBUG=4): y = (x * x + 1).max(axis=1).realize()
np.testing.assert_allclose(y.numpy(), (np.arange(12).reshape(3, 4) ** 2 + 1).max(axis=1))
print("y =", y.tolist())

# 5. A rewrite rule of your own. Every compiler stage is rules (pattern -> replacement) applied by
# graph_rewrite until nothing matches; here one on a hand-built index expression: a + a -> a << 1.
stop("5. a user-written rewrite rule")
i = UOp.range(100)  # a loop variable, 0..99
expr = i * 2 + i * 2
print("before:", render_expr(expr), "  (i*2 is one node, hash-consed:", expr.src[0] == expr.src[1], ")")
double_to_shift = PatternMatcher([
  (UPat.var("a", [dtypes.int32]) + UPat.var("a", [dtypes.int32]), lambda m: m["a"].alu(Ops.SHL, [UOp.const(dtypes.int32, 1)])),
])
shifted = graph_rewrite(expr, double_to_shift)
print("after: ", render_expr(shifted))
assert shifted.op == Ops.SHL
noisy = (i * 2) * 1 + 0
print(f"kiln's own simplifier: simplify({render_expr(noisy)}) = {render_expr(simplify(noisy))}")
assert simplify(noisy) == i * 2
print("\ntour done")
