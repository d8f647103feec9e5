"""kiln's safetensors files against Python's view of the format.

(a) kiln writes a file (safetensors_tool write); Python reads it with only json, struct and NumPy.
(b) Python writes a file from PyTorch tensors, by hand with json and struct; kiln loads it
    (safetensors_tool dump) and its raw bytes must match PyTorch's.

Usage: test_safetensors_interop.py PATH_TO_SAFETENSORS_TOOL. Exits 77 (ctest SKIP) without NumPy or torch.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skipping: {e}")
    sys.exit(77)

TOOL = sys.argv[1]

# safetensors dtype name -> NumPy dtype for reading; BF16 is read as its uint16 bit patterns.
NUMPY_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BOOL": np.bool_,
}


def extremes(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.min // 2 if info.min else 0, 0, 1, info.max], dtype=dtype)


# What safetensors_tool write saves; keep in step with write() in tests/tools/safetensors_tool.cpp.
KILN_TENSORS = {
    "f64": ("F64", np.array([0.1, -0.0, 1e300, -np.inf, 5e-324, 2], dtype=np.float64).reshape(2, 3)),
    "f32": ("F32", np.array([1.5, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 1e-45], dtype=np.float32)),
    "f16": ("F16", np.array([0x3C00, 0x8000, 0x7C00, 0x7E00, 0x0001, 0xC500], dtype=np.uint16).view(np.float16)),
    "bf16": ("BF16", np.array([0x3F80, 0xC040, 0x7F80, 0x7FC0, 0x0001, 0x4049], dtype=np.uint16)),
    "i64": ("I64", extremes(np.int64)),
    "i32": ("I32", extremes(np.int32)),
    "i16": ("I16", extremes(np.int16)),
    "i8": ("I8", extremes(np.int8)),
    "u64": ("U64", extremes(np.uint64)),
    "u32": ("U32", extremes(np.uint32)),
    "u16": ("U16", extremes(np.uint16)),
    "u8": ("U8", extremes(np.uint8)),
    "bool": ("BOOL", np.array([[True], [False], [True]])),
    "scalar": ("F32", np.array(42.0, dtype=np.float32)),
    "empty": ("I32", np.zeros((2, 0, 3), dtype=np.int32)),
    "transposed": ("I32", np.arange(6, dtype=np.int32).reshape(2, 3).T),
}
KILN_METADATA = {"framework": "kiln", "note": 'h\u00e9llo "quoted"'}


def read_safetensors(path):
    """The format as the reference describes it, with nothing but struct, json and NumPy."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header_bytes = raw[8:8 + n]
    assert n % 8 == 0, f"header length {n} is not a multiple of 8"
    text = header_bytes.decode("utf-8")
    assert text.startswith("{") and text.rstrip(" ").endswith("}"), "the padding must be trailing spaces"
    header = json.loads(header_bytes)
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    arrays, end = {}, 0
    for name in sorted(header, key=lambda k: header[k]["data_offsets"]):
        entry = header[name]
        begin, stop = entry["data_offsets"]
        assert begin == end, f"{name}: data begins at {begin}, expected {end} (contiguous)"
        end = stop
        dtype = NUMPY_DTYPES[entry["dtype"]]
        arrays[name] = (entry["dtype"], np.frombuffer(data[begin:stop], dtype=dtype).reshape(entry["shape"]))
    assert end == len(data), f"tensors cover {end} of {len(data)} data bytes"
    assert list(header) == sorted(header), "tensors are written in name order"
    return arrays, metadata


def kiln_writes_python_reads(workdir):
    path = os.path.join(workdir, "from_kiln.safetensors")
    subprocess.run([TOOL, "write", path], check=True)
    arrays, metadata = read_safetensors(path)
    assert metadata == KILN_METADATA, metadata
    assert sorted(arrays) == sorted(KILN_TENSORS), sorted(arrays)
    for name, (st_dtype, want) in KILN_TENSORS.items():
        got_dtype, got = arrays[name]
        assert got_dtype == st_dtype, f"{name}: dtype {got_dtype}, expected {st_dtype}"
        assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
        # Bytes, not values: NaN payloads, -0.0 and subnormals must survive exactly.
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), f"{name}: {got} != {want}"
    print(f"(a) kiln -> python: {len(arrays)} tensors match")


# PyTorch dtype -> (safetensors name, kiln's dtype name)
TORCH_DTYPES = {
    torch.float64: ("F64", "float64"), torch.float32: ("F32", "float32"), torch.float16: ("F16", "float16"),
    torch.bfloat16: ("BF16", "bfloat16"), torch.int64: ("I64", "int64"), torch.int32: ("I32", "int32"),
    torch.int16: ("I16", "int16"), torch.int8: ("I8", "int8"), torch.uint8: ("U8", "uint8"),
    torch.bool: ("BOOL", "bool"),
}


def torch_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: take the bits
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors_by_hand(path, tensors, metadata):
    """Data in the dict's (unsorted) order and header keys in another, as any writer may."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        blob = torch_bytes(t)
        header[name] = {"dtype": TORCH_DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(dict(reversed(list(header.items())))).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def python_writes_kiln_reads(workdir):
    torch.manual_seed(0)
    tensors = {
        "zeta.weight": torch.randn(3, 4),
        "alpha": torch.randn(2, 5, dtype=torch.float64),
        "half": torch.randn(7, dtype=torch.float16),
        "brain": torch.randn(2, 3, dtype=torch.bfloat16),
        "specials": torch.tensor([float("nan"), -0.0, float("inf"), -float("inf"), 1e-45]),
        "i64": torch.randint(-2**62, 2**62, (4,), dtype=torch.int64),
        "i32": torch.randint(-2**31, 2**31 - 1, (2, 2), dtype=torch.int32),
        "i16": torch.randint(-2**15, 2**15 - 1, (3,), dtype=torch.int16),
        "i8": torch.tensor([-128, -1, 0, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 1, 200, 255], dtype=torch.uint8),
        "mask": torch.tensor([[True, False], [False, True]]),
        "scalar": torch.tensor(3.5),
        "nothing": torch.empty(0, 5),
        "strided": torch.arange(12, dtype=torch.int32).reshape(3, 4).t(),
    }
    metadata = {"format": "pt", "epoch": "3"}
    path = os.path.join(workdir, "from_torch.safetensors")
    write_safetensors_by_hand(path, tensors, metadata)
    out = subprocess.run([TOOL, "dump", path], check=True, capture_output=True, text=True).stdout
    loaded = json.loads(out)
    assert loaded["metadata"] == metadata, loaded["metadata"]
    assert sorted(loaded["tensors"]) == sorted(tensors), sorted(loaded["tensors"])
    for name, t in tensors.items():
        got = loaded["tensors"][name]
        assert got["dtype"] == TORCH_DTYPES[t.dtype][1], f"{name}: dtype {got['dtype']}"
        assert got["shape"] == list(t.shape), f"{name}: shape {got['shape']}, expected {list(t.shape)}"
        assert got["hex"] == torch_bytes(t).hex(), f"{name}: bytes {got['hex']} != {torch_bytes(t).hex()}"
    print(f"(b) python -> kiln: {len(tensors)} tensors match")


def main():
    with tempfile.TemporaryDirectory() as workdir:
        kiln_writes_python_reads(workdir)
        python_writes_kiln_reads(workdir)


if __name__ == "__main__":
    main()
