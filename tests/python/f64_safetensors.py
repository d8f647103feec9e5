"""Writes torch tensors as one float64 safetensors file by hand (json + struct + NumPy, no safetensors
package): the reference files the C++ tests against PyTorch read."""
import json
import os
import struct

import numpy as np


def write_f64_safetensors(tensors, out):
    """8-byte little-endian header length, JSON header, raw little-endian float64 data; atomic."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name].detach().numpy().astype("<f8")).tobytes()
        shape = list(tensors[name].shape)
        header[name] = {"dtype": "F64", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(out + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(out + ".tmp", out)
    print(f"wrote {len(tensors)} tensors to {out}")
