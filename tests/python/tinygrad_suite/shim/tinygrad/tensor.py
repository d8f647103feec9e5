from kiln.tensor import Tensor  # noqa: F401
from tinygrad.dtype import _to_np_dtype  # noqa: F401
