"""bitcast: the same bits read as another dtype. Between sizes the last axis holds the bytes (tinygrad's
rule): float32 (..., n) is int8 (..., 4n), and back. Exact against NumPy's .view, which reads the same
memory; bfloat16 and fp8 (no NumPy type) through their uint16/uint8 bits."""
import numpy as np
import pytest
from kiln import KilnError, Tensor, dtypes

NUMPY = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
         "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "float16": np.float16, "float32": np.float32,
         "float64": np.float64}

def random_bits(shape, seed):
  return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)

@pytest.mark.parametrize("src", list(NUMPY))
@pytest.mark.parametrize("dst", list(NUMPY))
def test_bitcast_matches_numpy_view(src, dst):
  raw = random_bits((2, 3, 16), 1)
  if "float" in src:  # NaN payloads may be quieted by float loads; keep the source's floats finite
    raw = raw.view(NUMPY[src])
    raw = np.where(np.isfinite(raw), raw, 0).astype(NUMPY[src]).view(np.uint8)
  x = raw.view(NUMPY[src])
  want = x.view(NUMPY[dst])
  got = Tensor(x).bitcast(getattr(dtypes, dst))
  assert got.shape == want.shape and got.dtype == getattr(dtypes, dst)
  np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8))

def test_bitcast_inside_a_graph():
  # the bitcast of a computed tensor, then computed on: fused with its neighbours
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  got = ((Tensor(x) * 2).bitcast(dtypes.uint8) + 1).bitcast(dtypes.int32)
  want = ((x * 2).view(np.uint8) + np.uint8(1)).view(np.int32)
  np.testing.assert_array_equal(got.numpy(), want)
  h = Tensor(x).bitcast(dtypes.uint16)[:, 1::2]  # the high halves: float32's sign, exponent and top mantissa
  np.testing.assert_array_equal(h.numpy(), x.view(np.uint16)[:, 1::2])

@pytest.mark.parametrize("name,bits", [("bfloat16", "uint16"), ("fp8e4m3", "uint8"), ("fp8e5m2", "uint8")])
def test_bitcast_of_types_without_numpy(name, bits):
  raw = np.array([[0x3f800000, 0x40490fdb], [0x00000000, 0xbf800000]], dtype=np.uint32)
  got = Tensor(raw).bitcast(getattr(dtypes, name)).bitcast(getattr(dtypes, bits))
  np.testing.assert_array_equal(got.numpy(), raw.view(NUMPY[bits]))
  back = Tensor(raw.view(NUMPY[bits])).bitcast(getattr(dtypes, name)).bitcast(dtypes.uint32)
  np.testing.assert_array_equal(back.numpy(), raw)

def test_bitcast_size_errors():
  with pytest.raises(KilnError, match="must be a multiple of 2"): Tensor.empty(3, dtype=dtypes.int8).bitcast(dtypes.float16)
  with pytest.raises(KilnError, match="changes the last axis"): Tensor(1.0).bitcast(dtypes.int8)
