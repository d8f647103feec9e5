from kiln.uop import UOp  # noqa: F401
from tinygrad._internal import Internal
class Ops(Internal): pass
class KernelInfo(Internal): pass
