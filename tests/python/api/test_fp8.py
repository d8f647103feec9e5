"""fp8 dtypes (tinygrad's dtypes.fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz): decoding every bit pattern,
float32 -> fp8 rounding and arithmetic, against a float64 reference written from the formats' definitions
(this PyTorch predates torch.float8_*; PyTorch computes the float32 operations), plus finfo, promotion and
NumPy interop (NumPy has no fp8: .numpy() gives float32, as tinygrad)."""
import math
import numpy as np
import pytest
torch = pytest.importorskip("torch")
from kiln import Tensor, dtypes
from kiln.dtype import least_upper_dtype

# (mantissa bits, bias, kind): e4m3fn has no inf and S.1111.111 is NaN; e5m2 has IEEE specials; fnuz has no
# inf, no -0, and 0x80 is NaN
FORMATS = {"fp8e4m3": (3, 7, "e4m3fn"), "fp8e5m2": (2, 15, "ieee"), "fp8e4m3fnuz": (3, 8, "fnuz"), "fp8e5m2fnuz": (2, 16, "fnuz")}

def ref_decode(b: int, name: str) -> float:
  man, bias, kind = FORMATS[name]
  e, m, e_max, sign = (b & 0x7f) >> man, b & ((1 << man) - 1), (1 << (7 - man)) - 1, -1.0 if b & 0x80 else 1.0
  if kind == "fnuz" and b == 0x80: return math.nan
  if kind == "e4m3fn" and e == e_max and m == (1 << man) - 1: return math.nan
  if kind == "ieee" and e == e_max: return math.nan if m else sign * math.inf
  frac = m / (1 << man)
  return sign * (math.ldexp(frac, 1 - bias) if e == 0 else math.ldexp(1 + frac, e - bias))

def ref_encode(xs: np.ndarray, name: str) -> np.ndarray:
  """Nearest finite magnitude, ties to the even pattern; rounding to the step past the largest overflows
  (inf for e5m2, NaN for the others), as PyTorch's float8 conversions."""
  _, _, kind = FORMATS[name]
  values = [ref_decode(c, name) for c in range(0x80)]
  max_code = max(c for c, v in enumerate(values) if math.isfinite(v))
  cand = np.array(values[:max_code + 1] + [2 * values[max_code] - values[max_code - 1]])
  xs = np.asarray(xs, dtype=np.float64)
  err = np.abs(np.abs(xs)[:, None] - cand[None, :])
  best = np.min(err, axis=1, keepdims=True)
  ties = err == best
  # a tie is between two neighbouring patterns: take the even one
  code = np.where(ties.sum(axis=1) > 1, np.argmax(ties & (np.arange(len(cand)) % 2 == 0), axis=1), np.argmax(ties, axis=1))
  code = np.where(np.abs(xs) >= cand[-1], max_code + 1, code)  # far past the range, float64 distances all tie
  sign = np.where(np.signbit(xs), 0x80, 0)
  nan = np.full(xs.shape, 0x80) if kind == "fnuz" else sign | 0x7f
  overflow = (sign | 0x7c) if kind == "ieee" else nan
  out = np.where(code > max_code, overflow, sign | code)
  if kind == "fnuz": out = np.where(code == 0, 0, out)
  out = np.where(np.isinf(xs), overflow, out)
  return np.where(np.isnan(xs), nan, out).astype(np.uint8)

def edge_inputs(name: str) -> np.ndarray:
  """Every fp8 value, the midpoints between neighbours and the float32s beside them, specials, overflow,
  and random float32s across the range."""
  vals = [v for v in (ref_decode(c, name) for c in range(0x80)) if math.isfinite(v)]
  vals.append(2 * vals[-1] - vals[-2])
  mids = np.array([(a + b) / 2 for a, b in zip(vals, vals[1:])], dtype=np.float32)
  xs = [np.array(vals, dtype=np.float32), mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(1e30)),
        np.array([0.0, math.inf, math.nan, vals[-2] * 1.01, 1e-30, np.finfo(np.float32).max], dtype=np.float32)]
  rng = np.random.default_rng(7)
  bits = (rng.integers(127 - 24, 127 + 17, 3000, dtype=np.uint32) << 23) | rng.integers(0, 1 << 23, 3000, dtype=np.uint32)
  xs.append(bits.view(np.float32))
  x = np.concatenate(xs)
  return np.concatenate([x, -x])

@pytest.mark.parametrize("name", list(FORMATS))
def test_decodes_every_bit_pattern(name):
  got = Tensor(np.arange(256, dtype=np.uint8)).bitcast(getattr(dtypes, name)).numpy()
  want = np.array([ref_decode(b, name) for b in range(256)], dtype=np.float32)
  assert got.dtype == np.float32
  np.testing.assert_array_equal(got, want)  # NaN matches NaN
  assert (np.isnan(want) | (np.signbit(got) == np.signbit(want))).all()  # -0 apart from +0

@pytest.mark.parametrize("name", list(FORMATS))
def test_encodes_float32_to_nearest_even(name):
  x = edge_inputs(name)
  got = Tensor(x).cast(getattr(dtypes, name)).bitcast(dtypes.uint8).numpy()
  want = ref_encode(x, name)
  bad = np.flatnonzero(got != want)
  assert len(bad) == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:10]]

@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_arithmetic_rounds_float32_result_once(name, op):
  rng = np.random.default_rng(3)
  a, b = rng.integers(0, 256, 600, dtype=np.uint8), rng.integers(0, 256, 600, dtype=np.uint8)
  fa, fb = (np.array([ref_decode(int(v), name) for v in arr]) for arr in (a, b))
  keep = np.isfinite(fa) & np.isfinite(fb)
  a, b, fa, fb = a[keep], b[keep], fa[keep], fb[keep]
  dt = getattr(dtypes, name)
  ta, tb = Tensor(a).bitcast(dt), Tensor(b).bitcast(dt)
  got = getattr(ta, op)(tb).bitcast(dtypes.uint8).numpy()
  f32 = getattr(torch, op)(torch.tensor(fa, dtype=torch.float32), torch.tensor(fb, dtype=torch.float32)).numpy()
  want = ref_encode(f32, name)
  gv, wv = np.array([ref_decode(int(v), name) for v in got]), np.array([ref_decode(int(v), name) for v in want])
  ok = (got == want) | (gv == wv) | (np.isnan(gv) & np.isnan(wv))  # zeros by value
  bad = np.flatnonzero(~ok)
  assert len(bad) == 0, [(fa[i], fb[i], int(got[i]), int(want[i])) for i in bad[:10]]

def test_tensor_from_python_data_and_numpy():
  t = Tensor([1.0, 0.3, -500.0, 1000.0, 0.001], dtype=dtypes.fp8e4m3)
  assert t.dtype == dtypes.fp8e4m3
  out = t.numpy()
  assert out.dtype == np.float32  # NumPy has no fp8: float32, as tinygrad
  want = [ref_decode(int(c), "fp8e4m3") for c in ref_encode(np.array([1.0, 0.3, -500.0, 1000.0, 0.001], dtype=np.float32), "fp8e4m3")]
  np.testing.assert_array_equal(out, np.array(want, dtype=np.float32))
  assert Tensor(np.array([2.5, -0.75], dtype=np.float32), dtype=dtypes.fp8e5m2).tolist() == [2.5, -0.75]
  s = Tensor([0.25] * 64 + [0.5], dtype=dtypes.fp8e5m2).sum()  # accumulates in float32, rounds once
  assert s.dtype == dtypes.fp8e5m2 and s.item() == 16.0

def test_dtype_properties_finfo_and_promotion():
  assert dtypes.fp8s == (dtypes.fp8e4m3, dtypes.fp8e5m2, dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz)
  for d in dtypes.fp8s: assert d.itemsize == 1 and dtypes.is_float(d) and not dtypes.is_int(d)
  # tinygrad's finfo: (exponent, mantissa)
  assert dtypes.finfo(dtypes.fp8e4m3) == (4, 3) and dtypes.finfo(dtypes.fp8e5m2) == (5, 2)
  assert dtypes.finfo(dtypes.fp8e4m3fnuz) == (4, 3) and dtypes.finfo(dtypes.fp8e5m2fnuz) == (5, 2)
  assert dtypes.finfo(dtypes.float16) == (5, 10) and dtypes.finfo(dtypes.bfloat16) == (8, 7)
  # tinygrad's test_dtype_spec promotions
  assert least_upper_dtype(dtypes.fp8e4m3, dtypes.fp8e5m2) == dtypes.half
  assert least_upper_dtype(dtypes.fp8e4m3, dtypes.bfloat16) == dtypes.bfloat16
  assert least_upper_dtype(dtypes.fp8e5m2, dtypes.float16) == dtypes.float16
  assert least_upper_dtype(dtypes.fp8e4m3, dtypes.int64) == dtypes.fp8e4m3
  assert least_upper_dtype(dtypes.fp8e5m2, dtypes.uint64) == dtypes.fp8e5m2
  assert (Tensor([1, 2], dtype=dtypes.fp8e4m3) + Tensor([3, 4])).dtype == dtypes.fp8e4m3

def safetensors_bytes(entries: dict) -> bytes:
  """A safetensors file built by hand: {name: (dtype string, shape, raw bytes)}, data in the given order."""
  import json, struct
  header, data = {}, b""
  for name, (dtype, shape, raw) in entries.items():
    header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
  text = json.dumps(header).encode()
  return struct.pack("<Q", len(text)) + text + data

@pytest.mark.parametrize("name,st_dtype", [("fp8e4m3", "F8_E4M3"), ("fp8e5m2", "F8_E5M2")])
def test_safetensors_fp8_both_ways(tmp_path, name, st_dtype):
  """safetensors' F8_E4M3 / F8_E5M2: every bit pattern of a hand-built file decodes as the format defines,
  and kiln writes the same dtype string and bytes back."""
  import json, struct
  from kiln.nn.state import safe_load, safe_save
  codes = np.arange(256, dtype=np.uint8)
  (tmp_path / "in.safetensors").write_bytes(safetensors_bytes({"x": (st_dtype, (16, 16), codes.tobytes())}))
  x = safe_load(tmp_path / "in.safetensors")["x"]
  assert x.dtype == getattr(dtypes, name) and x.shape == (16, 16)
  want = np.array([ref_decode(b, name) for b in range(256)], dtype=np.float32).reshape(16, 16)
  np.testing.assert_array_equal(x.float().numpy(), want)  # NaNs in the same places
  safe_save({"y": x}, tmp_path / "out.safetensors")
  raw = (tmp_path / "out.safetensors").read_bytes()
  n = struct.unpack("<Q", raw[:8])[0]
  assert json.loads(raw[8:8 + n])["y"] == {"dtype": st_dtype, "shape": [16, 16], "data_offsets": [0, 256]}
  assert raw[8 + n:] == codes.tobytes()

@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="this PyTorch has no float8 dtypes")
def test_safetensors_fp8_from_torch_bytes(tmp_path):
  """Tensors PyTorch encoded as float8_e4m3fn / float8_e5m2, written to a safetensors file from their bytes."""
  from kiln.nn.state import safe_load
  values = torch.tensor([0.0, 1.0, -3.5, 0.015625, 240.0, -57344.0])
  a, b = values.clamp(-448, 448).to(torch.float8_e4m3fn), values.to(torch.float8_e5m2)
  raw = lambda t: t.view(torch.uint8).numpy().tobytes()
  (tmp_path / "t.safetensors").write_bytes(safetensors_bytes({"a": ("F8_E4M3", (6,), raw(a)), "b": ("F8_E5M2", (6,), raw(b))}))
  loaded = safe_load(tmp_path / "t.safetensors")
  np.testing.assert_array_equal(loaded["a"].float().numpy(), a.float().numpy())
  np.testing.assert_array_equal(loaded["b"].float().numpy(), b.float().numpy())
