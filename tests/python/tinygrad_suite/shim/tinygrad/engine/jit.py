from kiln.jit import TinyJit  # noqa: F401
