// The MPI job: joining it, this process's rank, and ending every rank when one fails.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "distributed/mpi_world.h"
#include "kiln/distributed.h"
#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln::distributed {
namespace {

struct World {
  bool initialized = false;
  bool mpi = false;  // false: a world of one, no MPI calls
  int rank = 0, size = 1;
};

World& world() {
  static World w;
  return w;
}

// The variables a launcher sets in each rank's environment (Open MPI's mpirun, PMI, PMIx).
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

// std::terminate (an uncaught exception): the other ranks may be waiting for this one in a
// collective, so end them all rather than only this process.
void abort_job_on_terminate() {
  std::string reason = "std::terminate was called";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      reason = std::string("uncaught exception: ") + ex.what();
    } catch (...) {
      reason = "uncaught exception of a type not derived from std::exception";
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "kiln::distributed: rank %d of %d: %s; aborting the job\n", world().rank, world().size,
               reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// At exit: MPI_Finalize after a normal end; after a failing one (a nonzero status, as from main
// returning 1 after reporting an error) MPI_Finalize would wait for ranks that may be waiting for
// this one, so abort the job instead.
void finalize_at_exit(int status, void*) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (status != 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln::distributed: rank %d of %d exited with status %d; aborting the job\n", world().rank,
                 world().size, status);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  MPI_Finalize();
}

const World& joined(const char* op) {
  if (!world().initialized)
    throw_error("kiln::distributed::", op, ": call kiln::distributed::init() first");
  return world();
}

}  // namespace

void init() {
  World& w = world();
  if (w.initialized) return;
  if (started_by_launcher()) {
    int already = 0;
    MPI_Initialized(&already);
    if (!already) {
      int provided = 0;
      // kiln's worker threads never call MPI; the calls come from one thread at a time.
      detail::check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "init");
    }
    // Errors come back as codes, turned into kiln errors, instead of ending the process.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    std::set_terminate(abort_job_on_terminate);
    on_exit(finalize_at_exit, nullptr);
    w.mpi = true;
  }
  w.initialized = true;
}

bool initialized() { return world().initialized; }
int rank() { return joined("rank").rank; }
int world_size() { return joined("world_size").size; }

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (world().mpi) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

namespace detail {

bool uses_mpi(const char* op) { return joined(op).mpi; }

void check_mpi(int code, const char* op) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  throw_error("kiln::distributed::", op, ": MPI failed: ", std::string(message, static_cast<size_t>(length)));
}

void agree(const char* op, const std::string& call) {
  constexpr int kChars = 256;  // a longer description is compared by its start
  const int size = world().size;
  std::vector<char> all(static_cast<size_t>(kChars) * static_cast<size_t>(size), '\0');
  std::vector<char> mine(kChars, '\0');
  std::memcpy(mine.data(), call.data(), std::min<size_t>(call.size(), kChars - 1));
  check_mpi(MPI_Allgather(mine.data(), kChars, MPI_CHAR, all.data(), kChars, MPI_CHAR, MPI_COMM_WORLD), op);
  for (int r = 1; r < size; r++)
    if (std::memcmp(all.data(), all.data() + static_cast<size_t>(r) * kChars, kChars) != 0)
      throw_error("kiln::distributed::", op, ": every rank must make the same call, but rank 0 passed ",
                  all.data(), " and rank ", r, " passed ", all.data() + static_cast<size_t>(r) * kChars);
}

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype.scalar) {
    case ScalarType::Bool: return MPI_UINT8_T;
    case ScalarType::Int8: return MPI_INT8_T;
    case ScalarType::Int16: return MPI_INT16_T;
    case ScalarType::Int32: return MPI_INT32_T;
    case ScalarType::Int64: return MPI_INT64_T;
    case ScalarType::UInt8: return MPI_UINT8_T;
    case ScalarType::UInt16: return MPI_UINT16_T;
    case ScalarType::UInt32: return MPI_UINT32_T;
    case ScalarType::UInt64: return MPI_UINT64_T;
    case ScalarType::Float32: return MPI_FLOAT;
    case ScalarType::Float64: return MPI_DOUBLE;
    default: throw_error("kiln::distributed: MPI has no reduction type for ", dtype.name());
  }
}

DType reduction_dtype(DType dtype) { return dtype.is_float() && dtype.itemsize() < 4 ? dtypes::float32 : dtype; }

int mpi_count(int64_t n, const char* op) {
  if (n > INT32_MAX)
    throw_error("kiln::distributed::", op, ": ", n, " elements is more than one MPI call takes (", INT32_MAX, ")");
  return static_cast<int>(n);
}

void copy_to_host(const Tensor& t, std::byte* dst) { tensor_to_bytes(t, dst, static_cast<size_t>(t.nbytes())); }

std::vector<std::byte> host_bytes(const Tensor& t) {
  std::vector<std::byte> bytes(static_cast<size_t>(t.nbytes()));
  copy_to_host(t, bytes.data());
  return bytes;
}

Tensor from_host(const std::byte* data, DType dtype, const Shape& shape, const std::string& device) {
  const size_t bytes = static_cast<size_t>(prod(shape) * dtype.itemsize());
  Tensor t = tensor_from_bytes(data, bytes, dtype, shape);
  return t.device() == device ? t : t.to(device);
}

}  // namespace detail
}  // namespace kiln::distributed
