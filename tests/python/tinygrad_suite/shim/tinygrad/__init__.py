"""An import shim: tinygrad's module names over kiln, so tinygrad's own test files run against kiln
(tests/python/tinygrad_suite/run.sh). Public names come from kiln; tinygrad internals the test files
import at module level (renderers, codegen, UOp internals) are placeholders that fail when used."""
from kiln import *  # noqa: F401,F403
from kiln import Tensor, dtypes, DType, GlobalCounters, Context, TinyJit, nn, getenv  # noqa: F401
from kiln.uop import UOp  # noqa: F401
from tinygrad.device import Device  # noqa: F401
