"""State dicts and safetensors files, as tinygrad's nn.state.

A model is any Python object: its tensors are found by walking attributes, lists, tuples and dicts
(tinygrad's rule), and a kiln layer contributes its C++ state dict; names are dotted paths
("layers.0.weight")."""
from __future__ import annotations
from collections import OrderedDict
from pathlib import Path
from kiln._core import _kiln
from kiln.nn import Layer, layer_tensor
from kiln.tensor import Tensor

def get_state_dict(obj, prefix: str = "") -> dict[str, Tensor]:
  """Every tensor of `obj` by dotted name (parameters and running statistics)."""
  if isinstance(obj, Tensor): return {prefix.strip("."): obj}
  if isinstance(obj, Layer):
    out = {prefix + k: layer_tensor(v) for k, v in obj._state_dict().items()}
    return out | get_state_dict(obj.__dict__, prefix) if hasattr(obj, "__dict__") else out  # a Python subclass's own
  if hasattr(obj, "_asdict"): return get_state_dict(obj._asdict(), prefix)
  if isinstance(obj, OrderedDict): return get_state_dict(dict(obj), prefix)
  if hasattr(obj, "__dict__"): return get_state_dict(obj.__dict__, prefix)
  out: dict[str, Tensor] = {}
  if isinstance(obj, (list, tuple)):
    for i, x in enumerate(obj): out.update(get_state_dict(x, f"{prefix}{i}."))
  elif isinstance(obj, dict):
    for k, v in obj.items(): out.update(get_state_dict(v, f"{prefix}{k}."))
  return out

def get_parameters(obj) -> list[Tensor]:
  """Every tensor of `obj`, as tinygrad's: an optimizer trains those whose requires_grad is True or
  None and keeps the others (running statistics) realized with each step."""
  return list(get_state_dict(obj).values())

def load_state_dict(model, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = True, consume: bool = False,
                    cast: bool = True):
  """Copies `state_dict` into the model's tensors. Missing, unexpected or mis-shaped keys are one
  error naming them all (strict); not strict skips the first two kinds. A tensor of another dtype is
  cast to the model's (tinygrad loads such tensors too), or is an error naming it with cast=False.
  consume=True removes the loaded entries from `state_dict`."""
  model_state = get_state_dict(model)
  _kiln.nn.load_state_dict_into({k: v._t for k, v in model_state.items()}, {k: v._t for k, v in state_dict.items()}, strict,
                                cast)
  if consume:
    for k in model_state: state_dict.pop(k, None)

def _as_tensor(name: str, value) -> Tensor:
  """A state dict's value as a Tensor: NumPy arrays are converted; anything else is a TypeError."""
  import numpy as np
  if isinstance(value, Tensor): return value
  if isinstance(value, np.ndarray): return Tensor(value)
  raise TypeError(f"safe_save: {name!r} must be a Tensor or a NumPy array, got {type(value).__name__}")

def safe_save(tensors: dict[str, Tensor], fn: str | Path, metadata: dict[str, str] | None = None):
  """Realizes `tensors` and writes them to `fn` in the safetensors format (atomically)."""
  _kiln.safe_save({k: _as_tensor(k, v)._t for k, v in tensors.items()}, str(fn), metadata or {})

def safe_load(fn: str | Path) -> dict[str, Tensor]:
  return {k: Tensor._wrap(v) for k, v in _kiln.safe_load(str(fn)).items()}

def safe_load_metadata(fn: str | Path) -> dict[str, str]:
  """The file's "__metadata__" strings, without reading tensor data."""
  return _kiln.safe_load_metadata(str(fn))

def gguf_load(fn: str | Path) -> tuple[dict, dict[str, Tensor]]:
  """Reads a GGUF file as tinygrad's gguf_load does: (kv_data, state_dict), the metadata as Python values
  and the tensors in row-major shape, plain ones in their stored dtype, quantized ones dequantized to float32."""
  if not isinstance(fn, (str, Path)): raise TypeError(f"gguf_load: expected a file name, got {type(fn).__name__}")
  kv_data, tensors = _kiln.gguf_load(str(fn))
  return kv_data, {k: Tensor._wrap(v) for k, v in tensors.items()}
