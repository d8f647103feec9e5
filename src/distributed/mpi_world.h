#pragma once
// The MPI side of src/distributed/, shared by its files: whether this process is in an MPI job, MPI's
// error codes as kiln errors, and a tensor's bytes on the host and back.
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::distributed::detail {

// Whether `op` runs MPI calls: false in a world of one. Throws when init() was not called.
bool uses_mpi(const char* op);
// Throws an error naming `op` and MPI's message when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* op);
// Checks that every rank makes the same call (`call` describes it: op, dtype, shape); a mismatch
// throws the same error on every rank instead of a hang or mixed-up bytes.
void agree(const char* op, const std::string& call);
// MPI's type for the elements of `dtype` when they are reduced (float32, float64, integers, bool).
MPI_Datatype mpi_datatype(DType dtype);
// The dtype `dtype` is reduced in: narrower floats (float16, bfloat16, fp8) in float32.
DType reduction_dtype(DType dtype);
// `n` as MPI's int count, or an error naming `op` when it does not fit.
int mpi_count(int64_t n, const char* op);

// t realized and copied to the host (into dst, t.nbytes() long), and host bytes back as a tensor of
// `shape` on `device`.
void copy_to_host(const Tensor& t, std::byte* dst);
std::vector<std::byte> host_bytes(const Tensor& t);
Tensor from_host(const std::byte* data, DType dtype, const Shape& shape, const std::string& device);

}  // namespace kiln::distributed::detail
