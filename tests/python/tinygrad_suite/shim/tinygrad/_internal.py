class Internal:
  """A tinygrad internal kiln does not have: importable, fails when used."""
  def __init__(self, *a, **k): raise NotImplementedError(f"{type(self).__name__} is a tinygrad internal kiln does not have")
def internal(name):
  def fn(*a, **k): raise NotImplementedError(f"{name} is a tinygrad internal kiln does not have")
  return fn

def missing(module: str):
  """A module __getattr__: a name kiln lacks imports as a placeholder, so only the tests using it fail."""
  def getattr_(name: str):
    if name.startswith("__"): raise AttributeError(name)
    return type(name, (Internal,), {"__doc__": f"{module}.{name}: not in kiln"})
  return getattr_
