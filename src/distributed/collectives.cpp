// Collectives on tensors: all_reduce, broadcast, all_gather, barrier. Each realizes its input, runs
// MPI on the bytes on the host and makes a new tensor of the result on the input's device.
#include <mpi.h>

#include "distributed/mpi_world.h"
#include "kiln/distributed.h"
#include "kiln/error.h"
#include "kiln/ir/uop.h"

namespace kiln::distributed {
namespace {

enum class Reduce { sum, mean, max, min };

Reduce parse_reduce(const std::string& op) {
  if (op == "sum") return Reduce::sum;
  if (op == "mean") return Reduce::mean;
  if (op == "max") return Reduce::max;
  if (op == "min") return Reduce::min;
  throw_error("kiln::distributed::all_reduce: op must be \"sum\", \"mean\", \"max\" or \"min\", got \"", op, "\"");
}

MPI_Op mpi_op(Reduce r) {
  switch (r) {
    case Reduce::max: return MPI_MAX;
    case Reduce::min: return MPI_MIN;
    default: return MPI_SUM;  // mean: the sum, divided afterwards
  }
}

void check_reducible(DType dtype, Reduce r, const std::string& op) {
  if (r == Reduce::mean && !dtype.is_float())
    throw_error("kiln::distributed::all_reduce: op \"mean\" needs a float tensor, got ", dtype.name(),
                " (cast it first, or use \"sum\")");
  if (dtype.is_bool() && r == Reduce::sum)
    throw_error("kiln::distributed::all_reduce: a bool tensor takes op \"max\" (or) or \"min\" (and), got \"", op,
                "\"");
}

std::string describe(const Tensor& t) { return t.dtype().name() + " " + shape_to_string(t.shape()); }

}  // namespace

Tensor all_reduce(const Tensor& t, const std::string& op) {
  const Reduce r = parse_reduce(op);
  check_reducible(t.dtype(), r, op);
  const bool mpi = detail::uses_mpi("all_reduce");
  if (mpi) detail::agree("all_reduce", op + " " + describe(t));
  const DType wire = detail::reduction_dtype(t.dtype());
  std::vector<std::byte> bytes = detail::host_bytes(wire == t.dtype() ? t : t.cast(wire));
  if (mpi && t.numel() > 0)
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, bytes.data(), detail::mpi_count(t.numel(), "all_reduce"),
                                    detail::mpi_datatype(wire), mpi_op(r), MPI_COMM_WORLD),
                      "all_reduce");
  Tensor out = detail::from_host(bytes.data(), wire, t.shape(), t.device());
  if (r == Reduce::mean) out = out / static_cast<double>(world_size());
  return wire == t.dtype() ? out : out.cast(t.dtype());
}

Tensor broadcast(const Tensor& t, int root) {
  const bool mpi = detail::uses_mpi("broadcast");
  if (root < 0 || root >= world_size())
    throw_error("kiln::distributed::broadcast: root must be a rank in [0, ", world_size(), "), got ", root);
  if (!mpi) return detail::from_host(detail::host_bytes(t).data(), t.dtype(), t.shape(), t.device());
  detail::agree("broadcast", "root " + std::to_string(root) + " " + describe(t));
  // Only the root's values are read; the others' tensors need not be realized.
  std::vector<std::byte> bytes = rank() == root ? detail::host_bytes(t) : std::vector<std::byte>(t.nbytes());
  if (!bytes.empty())
    detail::check_mpi(MPI_Bcast(bytes.data(), detail::mpi_count(t.nbytes(), "broadcast"), MPI_BYTE, root,
                                MPI_COMM_WORLD),
                      "broadcast");
  return detail::from_host(bytes.data(), t.dtype(), t.shape(), t.device());
}

Tensor all_gather(const Tensor& t, int axis) {
  const bool mpi = detail::uses_mpi("all_gather");
  if (t.ndim() == 0)
    throw_error("kiln::distributed::all_gather: expected a tensor of at least one dimension, got a 0-d tensor "
                "(reshape it to (1,) first)");
  const int a = t.normalize_axis(axis, "kiln::distributed::all_gather");
  if (mpi) detail::agree("all_gather", "axis " + std::to_string(a) + " " + describe(t));
  const int world = world_size();
  std::vector<std::byte> mine = detail::host_bytes(t);
  std::vector<std::byte> all = mine;
  if (mpi) {
    all.resize(mine.size() * static_cast<size_t>(world));
    const int count = detail::mpi_count(t.nbytes(), "all_gather");
    if (count > 0)
      detail::check_mpi(MPI_Allgather(mine.data(), count, MPI_BYTE, all.data(), count, MPI_BYTE, MPI_COMM_WORLD),
                        "all_gather");
  }
  // (world, d0, ..., dn) in rank order; the rank axis goes just before `axis`, then merges with it.
  Shape stacked = t.shape();
  stacked.insert(stacked.begin(), world);
  std::vector<int> order;
  for (int i = 1; i <= static_cast<int>(t.ndim()); i++) {
    if (i == a + 1) order.push_back(0);
    order.push_back(i);
  }
  Shape gathered = t.shape();
  gathered[static_cast<size_t>(a)] *= world;
  return detail::from_host(all.data(), t.dtype(), stacked, t.device()).permute(order).reshape(gathered);
}

void barrier() {
  if (detail::uses_mpi("barrier")) detail::check_mpi(MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

}  // namespace kiln::distributed
