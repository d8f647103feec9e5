"""Devices, as tinygrad's `Device`: `Device.DEFAULT` is where new tensors go (env DEV, else the best
registered device); assigning it changes that for the rest of the process. `Device["CPU"]` is the
device itself (created on first use): its name (`.device`), `synchronize()`, and what its kernels
get (`max_threads`, `vector_bytes`, `vector_registers`, `language`)."""
from __future__ import annotations
from typing import Iterator
from kiln._core import _kiln

class _Device:
  def __init__(self): self._override = None
  @property
  def DEFAULT(self) -> str: return _kiln.default_device()
  @DEFAULT.setter
  def DEFAULT(self, name: str):
    name = self.canonicalize(name)  # unknown names fail here
    if self._override is not None: self._override.restore()
    self._override = _kiln.EnvOverride("DEV", name)
  def canonicalize(self, device: str | None) -> str:
    """The registered device's canonical name ("cpu", "CPU:0" -> "CPU"); None is the default."""
    return self.DEFAULT if device is None else _kiln.canonical_device(device)
  def __getitem__(self, name: str) -> _kiln.CompiledDevice: return _kiln.get_device(name)
  def get_available_devices(self) -> Iterator[str]: yield from _kiln.device_names()

Device = _Device()
