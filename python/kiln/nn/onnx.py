"""ONNX models run on kiln, with tinygrad's interface: OnnxRunner(path)(inputs) -> outputs, both
dicts by name. The model is parsed and checked by the C++ importer (kiln/onnx.h): an op kiln does
not support is an error when the runner is made, not during a run."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.tensor import Tensor

if not hasattr(_kiln, "onnx"):
  raise ImportError("kiln.nn.onnx: this _kiln was built without ONNX (install libonnx-dev and rebuild _kiln)")

class OnnxRunner:
  def __init__(self, path):
    self._model = _kiln.onnx.Model.load(str(path))

  @property
  def inputs(self) -> list: return list(self._model.inputs)  # ValueInfo: name, dtype, shape (dims as strings)

  @property
  def outputs(self) -> list: return list(self._model.outputs)

  def __call__(self, inputs: dict, debug: bool = False) -> dict[str, Tensor]:
    declared = {v.name: v.dtype for v in self._model.inputs}
    core = {}
    for name, value in inputs.items():
      # NumPy arrays (and lists) become the dtype the model declares; kiln Tensors must already have it
      t = value if isinstance(value, Tensor) else Tensor(value, dtype=declared.get(name))
      core[name] = t._t
    return {name: Tensor._wrap(t) for name, t in self._model.run(core).items()}
