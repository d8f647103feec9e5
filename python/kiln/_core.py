"""The C++ extension, imported once with a message that says how to build it when it is missing."""
try:
  import _kiln
except ImportError as e:
  raise ImportError("kiln's C++ extension _kiln is not importable: build it (ninja -C build/release _kiln) and put "
                    "both <repo>/python and <build>/python on PYTHONPATH (see README, section Python)") from e

KilnError = _kiln.KilnError  # every error of the C++ engine (bad shapes, dtypes, axes, files...); a RuntimeError
KilnError.__module__ = "kiln"  # shown as kiln.KilnError in tracebacks
# The kinds, each both a KilnError and the Python built-in of its name (an axis out of range is an IndexError...).
KilnIndexError, KilnValueError = _kiln.KilnIndexError, _kiln.KilnValueError
KilnTypeError, KilnNotImplementedError = _kiln.KilnTypeError, _kiln.KilnNotImplementedError
