#pragma once
// Data-parallel training over MPI: `mpirun -np N program` starts N processes (ranks), each with its
// own copy of the model and its share of the data; after backward() the ranks average their
// gradients, so every rank takes the same optimizer step. Link the kiln::distributed library
// (libkiln itself needs no MPI). Without mpirun a process is a world of one and every collective
// returns its input's values.
//
// Collectives realize their input, run MPI on its bytes on the host and return a new tensor on the
// input's device. Every rank must call the same collectives in the same order with the same shape and
// dtype; a mismatch is an error on every rank (not a hang).
//
// A rank that fails ends the whole job within seconds instead of leaving the others waiting in a
// collective: after init(), an uncaught exception (std::terminate) prints its message and calls
// MPI_Abort, and a rank that exits with a nonzero status (main returning 1 after reporting an error)
// aborts the job the same way.
#include <kiln/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::distributed {

// Joins the job mpirun started (from its environment: Open MPI's, or PMI/PMIx variables); a process
// started without mpirun is rank 0 of a world of 1 and never touches MPI. Safe to call twice.
void init();
bool initialized();
int rank();
int world_size();

// Every rank gets the elementwise reduction over all ranks; op: "sum", "mean", "max" or "min".
// float32/float64 and integers are reduced in their own dtype; narrower floats (float16, bfloat16,
// fp8) in float32, rounded back once. "mean" needs a float dtype; bool takes "max" (or) and "min" (and).
Tensor all_reduce(const Tensor& t, const std::string& op = "sum");
// Every rank gets root's tensor (any dtype).
Tensor broadcast(const Tensor& t, int root = 0);
// The ranks' tensors concatenated along `axis`, in rank order (any dtype).
Tensor all_gather(const Tensor& t, int axis = 0);
// Waits until every rank calls it.
void barrier();

// Gradients of data-parallel training above this many bytes go in more than one bucket (PyTorch
// DDP's default size).
inline constexpr int64_t kDefaultBucketBytes = 25 << 20;

// Replaces each parameter's grad() by the mean of it over all ranks. The gradients are realized in one
// schedule, then packed into buckets of about `bucket_bytes` in reverse parameter order (the order
// backward produces them, as PyTorch DDP); each bucket's nonblocking all-reduce (MPI_Iallreduce)
// starts as soon as its bytes are copied out, so communication overlaps the copies of the later
// buckets and of the finished ones back in. Backward itself is one lazy schedule in kiln: realizing
// it bucket by bucket would recompute the gradients the buckets share, so it is not split.
// Every parameter needs a float gradient.
void average_gradients(const std::vector<Tensor>& params, int64_t bucket_bytes = kDefaultBucketBytes);
// Gives every rank root's values of `tensors` (parameters, and buffers such as BatchNorm's running
// statistics), assigned in place, so all ranks start training from the same state.
void broadcast_parameters(const std::vector<Tensor>& tensors, int root = 0);

// Ends every rank of the job with exit status `code` (MPI_Abort), or this process where there is no job.
[[noreturn]] void abort(int code = 1);

// Each rank's share of a dataset of `size` examples for an epoch, as PyTorch's DistributedSampler:
// one permutation of all indices (the same on every rank: from seed and epoch; in order without
// shuffle), padded by repeating its start to a multiple of the world size (or cut to one with
// drop_last), and rank r takes positions r, r + world, r + 2 world, ... So the i-th batch of
// `per_rank` examples on every rank together are the i-th batch of world * per_rank examples of the
// permutation.
class DistributedSampler {
 public:
  explicit DistributedSampler(int64_t size, uint64_t seed = 0, bool shuffle = true, bool drop_last = false);
  std::vector<int64_t> indices(int64_t epoch) const;  // this rank's share
  int64_t num_samples() const;                        // the length of each rank's share

 private:
  int64_t size_;
  uint64_t seed_;
  bool shuffle_, drop_last_;
};

}  // namespace kiln::distributed
