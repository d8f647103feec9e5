"""kiln.nn.state.gguf_load against a GGUF file written here with struct, byte by byte, and NumPy's
reading of the same blocks (the Q8_0 values compared exactly)."""
import struct

import numpy as np
import pytest

from kiln import KilnError, dtypes
from kiln.nn.state import gguf_load


def _str(s: bytes) -> bytes:
  return struct.pack("<Q", len(s)) + s


def _write_gguf(path, q8_block: bytes, f16: np.ndarray):
  kv = [
    (b"general.architecture", 8, _str(b"llama")),
    (b"llama.context_length", 4, struct.pack("<I", 2048)),
    (b"flag", 7, b"\x01"),
    (b"scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<2f", 0.5, -1.0)),
    (b"nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 5, 2) + struct.pack("<2i", -3, 4)),
  ]
  out = b"GGUF" + struct.pack("<IQQ", 3, 2, len(kv))
  for key, kind, value in kv: out += _str(key) + struct.pack("<I", kind) + value
  # ggml's dims are innermost first: f16 is 2 rows of 3 -> dims (3, 2); the Q8_0 tensor one row of 32.
  out += _str(b"h") + struct.pack("<I2QIQ", 2, 3, 2, 1, 0)
  out += _str(b"q") + struct.pack("<I2QIQ", 2, 32, 1, 8, 32)
  out += b"\0" * (-len(out) % 32)
  out += f16.astype("<f2").tobytes().ljust(32, b"\0") + q8_block
  path.write_bytes(out)


def test_gguf_load_reads_metadata_and_tensors_as_tinygrad(tmp_path):
  rng = np.random.default_rng(0)
  d = np.float16(0.037)
  qs = rng.integers(-128, 128, 32).astype(np.int8)
  f16 = rng.standard_normal((2, 3)).astype(np.float16)
  _write_gguf(tmp_path / "m.gguf", d.tobytes() + qs.tobytes(), f16)

  kv, sd = gguf_load(tmp_path / "m.gguf")
  assert kv == {"general.architecture": "llama", "llama.context_length": 2048, "flag": True, "scores": [0.5, -1.0],
                "nested": [[-3, 4]]}
  assert sd["h"].dtype == dtypes.float16
  np.testing.assert_array_equal(sd["h"].numpy(), f16)
  assert sd["q"].shape == (1, 32)
  np.testing.assert_array_equal(sd["q"].numpy(), (qs.astype(np.float32) * np.float32(d))[None])


def test_gguf_load_errors_name_the_file(tmp_path):
  bad = tmp_path / "bad.gguf"
  bad.write_bytes(b"GGML" + b"\0" * 20)
  with pytest.raises(KilnError, match=r"bad\.gguf.*expected the magic"):
    gguf_load(bad)
  with pytest.raises(TypeError, match="expected a file name"):
    gguf_load(123)
