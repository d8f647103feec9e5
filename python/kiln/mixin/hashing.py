"""Keccak (SHA-3 / SHAKE) over the last axis of uint8 data, and tinygrad's 16-byte tensor hash built on it,
as lazy uint64 tensor ops. https://keccak.team/keccak_specs_summary.html"""
from __future__ import annotations
import functools
import math
from kiln.dtype import dtypes
from kiln.mixin.base import TensorBase

# (rate in bytes, domain-separation byte)
KECCAK_CONFIGS = {"sha3_224": (144, 0x06), "sha3_256": (136, 0x06), "shake_128": (168, 0x1F)}
ROUND_CONSTANTS = (
  0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000, 0x000000000000808B, 0x0000000080000001,
  0x8000000080008081, 0x8000000000008009, 0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
  0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003, 0x8000000000008002, 0x8000000000000080,
  0x000000000000800A, 0x800000008000000A, 0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008)

@functools.cache
def _rho_pi() -> tuple[list[int], list[int]]:
  """For output lane 5*y + x (x, y in 0..4): the input lane that the pi step moves there and the rho rotation it
  carries. pi moves lane (x, y) to (y, 2x + 3y); rho rotates lane (x, y) by the triangular numbers along that walk."""
  rotation = [[0] * 5 for _ in range(5)]
  x, y = 1, 0
  for t in range(24):
    rotation[x][y] = (t + 1) * (t + 2) // 2 % 64
    x, y = y, (2 * x + 3 * y) % 5
  source, amount = [0] * 25, [0] * 25
  for x in range(5):
    for y in range(5):
      source[5 * ((2 * x + 3 * y) % 5) + y], amount[5 * ((2 * x + 3 * y) % 5) + y] = 5 * y + x, rotation[x][y]
  return source, amount

class HashingMixin(TensorBase):
  __slots__ = ()

  def _u64(self, values: list[int]):
    return type(self)(values, dtype=dtypes.uint64)

  def _keccak_f(self, state):
    """The 24 rounds of Keccak-f[1600] on a (batch, 25) uint64 state, lane 5*y + x."""
    source, amount = _rho_pi()
    source, left = type(self)(source, dtype=dtypes.int32), self._u64(amount)
    right = self._u64([(64 - a) % 64 for a in amount])  # a rotation by 0 is (v << 0) | (v >> 0) = v
    bs = state.shape[0]
    for rc in ROUND_CONSTANTS:
      p = state.reshape(bs, 5, 5)  # (y, x)
      c = p[:, 0] ^ p[:, 1] ^ p[:, 2] ^ p[:, 3] ^ p[:, 4]  # theta: column parities, then each column's D
      c_next = c.roll(-1, 1)
      state = (p ^ (c.roll(1, 1) ^ (c_next << 1) ^ (c_next >> 63)).unsqueeze(1)).flatten(1)
      state = state[:, source]
      state = ((state << left) | (state >> right)).reshape(bs, 5, 5)
      state = state ^ (~state.roll(-1, 2) & state.roll(-2, 2))  # chi, along x
      state = state.flatten(1) ^ self._u64([rc] + [0] * 24)  # iota
    return state

  def keccak(self, cfg: str | tuple[int, int] = "sha3_256"):
    """The Keccak digest of the last axis (uint8 bytes): cfg names a SHA-3 / SHAKE variant or gives (rate in
    bytes, domain byte). The digest is (200 - rate) // 2 bytes: 32 for sha3_256, 16 for shake_128."""
    if self.dtype != dtypes.uint8: raise TypeError(f"keccak: expected uint8 bytes, got {self.dtype}")
    if isinstance(cfg, str) and cfg not in KECCAK_CONFIGS:
      raise ValueError(f"keccak: cfg={cfg!r}: expected one of {sorted(KECCAK_CONFIGS)} or (rate, domain byte)")
    rate, domain = KECCAK_CONFIGS[cfg] if isinstance(cfg, str) else cfg
    batch, n = self.shape[:-1], self.shape[-1]
    bs = math.prod(batch)
    # pad10*1 after the domain bits: the message grows to a whole number of rate-byte blocks
    pad = [0] * (rate - n % rate)
    pad[0] ^= domain
    pad[-1] ^= 0x80
    data = self.reshape(bs, n).cat(type(self)(pad, dtype=dtypes.uint8).unsqueeze(0).expand(bs, len(pad)), dim=1)
    # little-endian bytes to uint64 lanes, rate // 8 of the 25 per block
    shifts = self._u64([8 * i for i in range(8)])
    lanes = (data.reshape(bs, -1, rate // 8, 8).cast(dtypes.uint64) << shifts).sum(axis=-1, dtype=dtypes.uint64)
    lanes = lanes.pad((None, None, (0, 25 - rate // 8)))
    state = type(self).zeros(bs, 25, dtype=dtypes.uint64)
    # absorbing each block into its own buffer first gives every block the same rounds graph: compiled once
    for k in range(lanes.shape[1]): state = self._keccak_f((state ^ lanes[:, k]).realize()).realize()
    out = (200 - rate) // 2
    digest = ((state[:, :(out + 7) // 8].unsqueeze(-1) >> shifts) & 0xFF).cast(dtypes.uint8).flatten(1)[:, :out]
    return digest.reshape(*batch, out)

  def hash(self):
    """tinygrad's 16-byte hash of the bytes of a uint8 tensor: SHAKE-128 of each 4 KiB piece of each 1 MiB chunk
    (zero-padded), then of those digests, as a tree until one chunk is left."""
    data = self.flatten()
    if data.dtype != dtypes.uint8: raise TypeError(f"hash: expected uint8 bytes, got {data.dtype}")
    mb = 2 ** 20
    while (chunks := -(-data.shape[0] // mb)) > 1:
      data = data.pad((0, chunks * mb - data.shape[0])).reshape(chunks, mb)._hash_1mb().flatten()
    return data.pad((0, mb - data.shape[0])).unsqueeze(0)._hash_1mb().flatten()[:16]

  def _hash_1mb(self):
    return self.reshape(-1, 4096).keccak("shake_128").reshape(self.shape[0], -1).keccak("shake_128")
