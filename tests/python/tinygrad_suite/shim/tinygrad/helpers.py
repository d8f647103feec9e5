import os, tempfile, ctypes
from kiln.helpers import *  # noqa: F401,F403
from kiln.helpers import Context, GlobalCounters, getenv, T  # noqa: F401

class _Var:
  """tinygrad's ContextVar: a setting read with .value (and compared as an int)."""
  def __init__(self, key, default): self.key, self.default = key, default
  @property
  def value(self): return type(self.default)(os.getenv(self.key, self.default))
  def __bool__(self): return bool(self.value)
  def __ge__(self, x): return self.value >= x
  def __gt__(self, x): return self.value > x
  def __lt__(self, x): return self.value < x
  def __le__(self, x): return self.value <= x
  def __eq__(self, x): return self.value == x
  def __hash__(self): return hash(self.key)

class _Emulated(_Var):
  def tolist(self, dtypes): return [getattr(dtypes, n) for n in self.value.split(",") if n]
DEBUG, IMAGE, EMULATED_DTYPES = _Var("DEBUG", 0), _Var("IMAGE", 0), _Emulated("EMULATED_DTYPES", "")

class Target:
  """tinygrad's device target (DEV=device:renderer:arch): kiln's default device, its own renderer."""
  renderer = arch = interface = indices = ""
  def __init__(self, device=""): self.device = device
class _Dev(_Var):
  @property
  def value(self):
    from kiln.device import Device
    return Target(Device.DEFAULT)
  def __getattr__(self, name): return getattr(self.value, name)
DEV = _Dev("DEV", "")
def temp(x: str, append_user: bool = False) -> str: return os.path.join(tempfile.gettempdir(), x)
def mv_address(mv) -> int: return ctypes.addressof(ctypes.c_char.from_buffer(mv))
