"""State dicts and safetensors files, as tinygrad's nn.state.

A model is any Python object: its tensors are found by walking attributes, lists, tuples and dicts
(tinygrad's rule), and a kiln layer contributes its C++ state dict; names are dotted paths
("layers.0.weight")."""
from __future__ import annotations
from collections import OrderedDict
from pathlib import Path
from kiln._core import _kiln
from kiln.nn import Layer
from kiln.tensor import Tensor

def _walk(obj, prefix: str, trainable_only: bool) -> dict[str, Tensor]:
  if isinstance(obj, Tensor): return {prefix.strip("."): obj}
  if isinstance(obj, Layer):
    state = obj._layer.state_dict()
    # a layer's running statistics are state but not parameters
    out = {prefix + k: Tensor._wrap(v) for k, v in state.items() if v.requires_grad or not trainable_only}
    return out | _walk(obj.__dict__, prefix, trainable_only) if hasattr(obj, "__dict__") else out
  if hasattr(obj, "_asdict"): return _walk(obj._asdict(), prefix, trainable_only)
  if isinstance(obj, OrderedDict): return _walk(dict(obj), prefix, trainable_only)
  if hasattr(obj, "__dict__"): return _walk(obj.__dict__, prefix, trainable_only)
  out: dict[str, Tensor] = {}
  if isinstance(obj, (list, tuple)):
    for i, x in enumerate(obj): out.update(_walk(x, f"{prefix}{i}.", trainable_only))
  elif isinstance(obj, dict):
    for k, v in obj.items(): out.update(_walk(v, f"{prefix}{k}.", trainable_only))
  return out

def get_state_dict(obj, prefix: str = "") -> dict[str, Tensor]:
  """Every tensor of `obj` by dotted name (parameters and running statistics)."""
  return _walk(obj, prefix, False)

def get_parameters(obj) -> list[Tensor]:
  """The tensors an optimizer should update: a kiln layer's parameters (not its running
  statistics) and every tensor held directly by Python objects."""
  return list(_walk(obj, "", True).values())

def load_state_dict(model, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = True, consume: bool = False):
  """Copies `state_dict` into the model's tensors (cast to their dtypes). Missing, unexpected or
  mis-shaped keys are one error naming them all (strict); not strict skips the first two kinds.
  consume=True removes the loaded entries from `state_dict`."""
  model_state = get_state_dict(model)
  _kiln.nn.load_state_dict_into({k: v._t for k, v in model_state.items()}, {k: v._t for k, v in state_dict.items()}, strict)
  if consume:
    for k in model_state: state_dict.pop(k, None)

def safe_save(tensors: dict[str, Tensor], fn: str | Path, metadata: dict[str, str] | None = None):
  """Realizes `tensors` and writes them to `fn` in the safetensors format (atomically)."""
  _kiln.safe_save({k: v._t for k, v in tensors.items()}, str(fn), metadata or {})

def safe_load(fn: str | Path) -> dict[str, Tensor]:
  return {k: Tensor._wrap(v) for k, v in _kiln.safe_load(str(fn)).items()}

def safe_load_metadata(fn: str | Path) -> dict[str, str]:
  """The file's "__metadata__" strings, without reading tensor data."""
  return _kiln.safe_load_metadata(str(fn))
