"""Datasets as tensors, as tinygrad's nn.datasets, read from local files (no downloads): the idx
format and Fashion-MNIST (Debian's dataset-fashion-mnist, or $KILN_FASHION_MNIST)."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.tensor import Tensor

def fashion_mnist(dir: str = "") -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """X_train (60000, 1, 28, 28) uint8, Y_train (60000,) uint8, X_test, Y_test. `dir` holds the four
  idx files (plain or .gz); empty means $KILN_FASHION_MNIST, else /usr/share/datasets/fashion-mnist."""
  return tuple(Tensor._wrap(t) for t in _kiln.fashion_mnist(dir))

def mnist(device=None, fashion: bool = False, dir: str = "") -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """tinygrad's mnist(): Fashion-MNIST with fashion=True. Plain MNIST is not installed with kiln:
  pass `dir`, a directory of its four idx files (they are named as Fashion-MNIST's)."""
  if not fashion and not dir:
    raise _kiln.KilnError("mnist: only Fashion-MNIST is available offline; call mnist(fashion=True), or pass dir= "
                          "with MNIST's idx files")
  return tuple(t if device is None else t.to(device) for t in fashion_mnist(dir))

def load_idx(path: str) -> Tensor:
  """An idx file (plain or gzip), with the dtype and shape its header gives."""
  return Tensor._wrap(_kiln.load_idx(path))
