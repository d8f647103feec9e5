// Data-parallel training: every rank starts from rank 0's parameters (broadcast_parameters) and
// averages its gradients with the others' after backward (average_gradients), bucket by bucket.
#include <mpi.h>

#include "distributed/mpi_world.h"
#include "kiln/distributed.h"
#include "kiln/error.h"
#include "kiln/ir/uop.h"

namespace kiln::distributed {
namespace {

// Gradients reduced together: one dtype, in reverse parameter order, about bucket_bytes at most
// (a larger gradient gets a bucket of its own).
struct Bucket {
  DType dtype;
  std::vector<size_t> members;  // indices into the parameters
  std::vector<std::byte> bytes;
};

std::vector<Bucket> plan_buckets(const std::vector<Tensor>& wire, int64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  int64_t filled = 0;
  for (size_t i = wire.size(); i-- > 0;) {
    const int64_t bytes = wire[i].nbytes();
    if (buckets.empty() || buckets.back().dtype != wire[i].dtype() || filled + bytes > bucket_bytes) {
      buckets.push_back({wire[i].dtype(), {}, {}});
      filled = 0;
    }
    buckets.back().members.push_back(i);
    filled += bytes;
  }
  return buckets;
}

// Describes the gradients, so agree() finds ranks whose models differ.
std::string describe(const std::vector<Tensor>& grads, int64_t bucket_bytes) {
  std::string all;
  for (const Tensor& g : grads) all += g.dtype().name() + shape_to_string(g.shape());
  return std::to_string(grads.size()) + " gradients, bucket_bytes " + std::to_string(bucket_bytes) + ", shapes #" +
         std::to_string(std::hash<std::string>{}(all));
}

}  // namespace

void average_gradients(const std::vector<Tensor>& params, int64_t bucket_bytes) {
  if (bucket_bytes <= 0)
    throw_error("kiln::distributed::average_gradients: bucket_bytes must be positive, got ", bucket_bytes);
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); i++) {
    std::optional<Tensor> g = params[i].grad();
    if (!g)
      throw_error("kiln::distributed::average_gradients: parameter ", i, " (shape ", shape_to_string(params[i].shape()),
                  ") has no gradient; call backward() on the loss first");
    if (!g->dtype().is_float())
      throw_error("kiln::distributed::average_gradients: parameter ", i, " has a ", g->dtype().name(),
                  " gradient; expected a float one");
    grads.push_back(*g);
  }
  if (!detail::uses_mpi("average_gradients")) return;  // the mean over one rank is its own gradient
  detail::agree("average_gradients", describe(grads, bucket_bytes));

  // The backward pass in one schedule, in the dtypes the buckets are reduced in.
  std::vector<Tensor> wire;
  for (const Tensor& g : grads) {
    const DType d = detail::reduction_dtype(g.dtype());
    wire.push_back(d == g.dtype() ? g : g.cast(d));
  }
  Tensor::realize(wire);

  std::vector<Bucket> buckets = plan_buckets(wire, bucket_bytes);
  std::vector<MPI_Request> requests(buckets.size(), MPI_REQUEST_NULL);
  for (size_t b = 0; b < buckets.size(); b++) {
    Bucket& bucket = buckets[b];
    int64_t count = 0;
    for (size_t i : bucket.members) count += wire[i].numel();
    bucket.bytes.resize(static_cast<size_t>(count * bucket.dtype.itemsize()));
    size_t offset = 0;
    for (size_t i : bucket.members) {
      detail::copy_to_host(wire[i], bucket.bytes.data() + offset);
      offset += static_cast<size_t>(wire[i].nbytes());
    }
    detail::check_mpi(MPI_Iallreduce(MPI_IN_PLACE, bucket.bytes.data(), detail::mpi_count(count, "average_gradients"),
                                     detail::mpi_datatype(bucket.dtype), MPI_SUM, MPI_COMM_WORLD, &requests[b]),
                      "average_gradients");
    // MPI moves a nonblocking collective along inside its calls: give the started ones a turn.
    int done = 0;
    detail::check_mpi(MPI_Testall(static_cast<int>(b + 1), requests.data(), &done, MPI_STATUSES_IGNORE),
                      "average_gradients");
  }

  const double world = world_size();
  for (size_t b = 0; b < buckets.size(); b++) {
    detail::check_mpi(MPI_Wait(&requests[b], MPI_STATUS_IGNORE), "average_gradients");
    size_t offset = 0;
    for (size_t i : buckets[b].members) {
      // The division and the cast back stay lazy: they fuse into the optimizer's kernels.
      Tensor mean = detail::from_host(buckets[b].bytes.data() + offset, wire[i].dtype(), wire[i].shape(),
                                      grads[i].device()) / world;
      Tensor param = params[i];  // a handle to the same tensor
      param.set_grad(mean.dtype() == grads[i].dtype() ? mean : mean.cast(grads[i].dtype()));
      offset += static_cast<size_t>(wire[i].nbytes());
    }
  }
}

void broadcast_parameters(const std::vector<Tensor>& tensors, int root) {
  if (!detail::uses_mpi("broadcast_parameters")) return;
  std::vector<Tensor> targets = tensors;  // handles to the same tensors, assigned in place
  for (Tensor& t : targets) t.assign(broadcast(t.detach(), root));
  Tensor::realize(targets);
}

}  // namespace kiln::distributed
