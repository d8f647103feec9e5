"""Checking a kiln op against PyTorch (CPU), forward and backward, as tinygrad's test_ops does.

The same NumPy inputs go to both; the backward pass weights the output by fixed random numbers (a
plain sum would hide errors that cancel). Tolerances: float32 compares within rtol 1e-5 / atol 1e-6
unless a test states otherwise; float16 within 1e-3 / 1e-3; float64 within 1e-10 / 1e-12.
"""
import numpy as np
import torch
from kiln import Tensor

TOLERANCE = {np.float32: (1e-5, 1e-6), np.float16: (1e-3, 1e-3), np.float64: (1e-10, 1e-12)}

def inputs(shapes, low=-2.0, high=2.0, dtype=np.float32, seed=0):
  rng = np.random.default_rng(seed)
  if np.issubdtype(dtype, np.integer): return [rng.integers(int(low), int(high), s).astype(dtype) for s in shapes]
  return [rng.uniform(low, high, s).astype(dtype) for s in shapes]

def check_op(shapes, torch_fn, kiln_fn=None, *, low=-2.0, high=2.0, dtype=np.float32, rtol=None, atol=None,
             grad_rtol=None, grad_atol=None, forward_only=False, vals=None, seed=0):
  """kiln_fn(*kiln tensors) must equal torch_fn(*torch tensors); kiln_fn defaults to torch_fn (the
  method names are the same). `vals` gives the inputs instead of random `shapes`."""
  kiln_fn = kiln_fn or torch_fn
  arrays = [np.asarray(v) for v in vals] if vals is not None else inputs(shapes, low, high, dtype, seed)
  default_rtol, default_atol = TOLERANCE.get(dtype, (0, 0))
  rtol, atol = default_rtol if rtol is None else rtol, default_atol if atol is None else atol
  grad = not forward_only and all(np.issubdtype(a.dtype, np.floating) for a in arrays)
  tt = [torch.tensor(a, requires_grad=grad) for a in arrays]
  kt = [Tensor(a, requires_grad=grad) for a in arrays]
  out_t, out_k = torch_fn(*tt), kiln_fn(*kt)
  expected = out_t.detach().numpy()
  if grad:
    w = np.random.default_rng(seed + 1).uniform(-1, 1, expected.shape).astype(expected.dtype)
    (out_t * torch.tensor(w)).sum().backward()
    (out_k * Tensor(w)).sum().backward()
  got = out_k.numpy()
  assert got.shape == expected.shape, f"shape {got.shape} != torch's {expected.shape}"
  assert got.dtype == expected.dtype or not np.issubdtype(expected.dtype, np.floating), f"dtype {got.dtype} != torch's {expected.dtype}"
  np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg="forward")
  if not grad: return
  for i, (a, b) in enumerate(zip(kt, tt)):
    if b.grad is None: continue  # not differentiable through this input (integer paths)
    assert a.grad is not None, f"no gradient for input {i}"
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=grad_rtol or rtol * 10, atol=grad_atol or atol * 10,
                               err_msg=f"gradient of input {i}")
