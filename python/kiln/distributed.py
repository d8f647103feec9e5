"""Data-parallel training over MPI: kiln.distributed (the C++ kiln/distributed.h).

`mpirun -np N python3 train.py` starts N processes (ranks); without mpirun a process is a world of one and
the collectives return their input's values. Call `init()` first. Collectives realize their input, reduce
its bytes over MPI on the host and return a new Tensor on the input's device; every rank must make the same
calls with the same shapes and dtypes (a mismatch is a KilnError on every rank).

init(), rank(), world_size(), barrier()
all_reduce(t, op="sum")    op: "sum", "mean" (float tensors), "max", "min"
broadcast(t, root=0), all_gather(t, axis=0)
average_gradients(params, bucket_bytes=25 MiB)   each param's .grad becomes its mean over the ranks
broadcast_parameters(tensors, root=0)             root's values assigned into every rank's tensors
DistributedSampler(size, seed=0, shuffle=True, drop_last=False).indices(epoch): this rank's share

A rank that fails ends the whole job (MPI_Abort) instead of leaving the others waiting: an uncaught
exception exits Python with status 1, and a nonzero exit status aborts the job."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.tensor import Tensor

if not hasattr(_kiln, "distributed"):
  raise ImportError("kiln.distributed: this _kiln was built without MPI (install libopenmpi-dev and rebuild _kiln)")
_d = _kiln.distributed
DistributedSampler = _d.DistributedSampler
DistributedSampler.__module__ = "kiln.distributed"

def init() -> None: _d.init()
def initialized() -> bool: return _d.initialized()
def rank() -> int: return _d.rank()
def world_size() -> int: return _d.world_size()
def barrier() -> None: _d.barrier()
def abort(code: int = 1) -> None: _d.abort(code)

def all_reduce(t: Tensor, op: str = "sum") -> Tensor: return Tensor._wrap(_d.all_reduce(t._t, op))
def broadcast(t: Tensor, root: int = 0) -> Tensor: return Tensor._wrap(_d.broadcast(t._t, root))
def all_gather(t: Tensor, axis: int = 0) -> Tensor: return Tensor._wrap(_d.all_gather(t._t, axis))

def average_gradients(params: list[Tensor], bucket_bytes: int = 25 << 20) -> None:
  _d.average_gradients([p._t for p in params], bucket_bytes)

def broadcast_parameters(tensors: list[Tensor], root: int = 0) -> None:
  _d.broadcast_parameters([t._t for t in tensors], root)

__all__ = ["init", "initialized", "rank", "world_size", "barrier", "abort", "all_reduce", "broadcast", "all_gather",
           "average_gradients", "broadcast_parameters", "DistributedSampler"]
