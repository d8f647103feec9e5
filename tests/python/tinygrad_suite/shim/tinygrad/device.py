from kiln.device import Device as _kiln_device

class _Renderer:
  """What tinygrad's tests read from Device[...].renderer: the device name and its abilities."""
  def __init__(self, dev): self.device, self.has_local, self.has_shared = dev.device, False, False
  supports_float4, global_max, local_max, tensor_cores = True, None, None, []
  def supported_dtypes(self):
    from kiln.dtype import dtypes
    return set(dtypes.fields().values())

class _Compiled:
  def __init__(self, dev): self._dev, self.renderer = dev, _Renderer(dev)
  def __getattr__(self, name): return getattr(self._dev, name)

class _Device:
  def __getattr__(self, name): return getattr(_kiln_device, name)
  def __setattr__(self, name, value): setattr(_kiln_device, name, value)
  def __getitem__(self, name): return _Compiled(_kiln_device[name])

Device = _Device()
