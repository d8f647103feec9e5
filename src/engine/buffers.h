#pragma once
// Device memory behind BUFFER UOps. Allocated on first use, freed when the BUFFER UOp is freed
// (that is, when no tensor or schedule refers to it any more).
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln::engine {

// The device address of `buffer`'s memory, allocating it if needed.
void* buffer_address(const UOp& buffer);
// buffer_address of each of `buffers`, in order: a launch's arguments, under one lock.
std::vector<void*> buffer_addresses(std::span<const UOp* const> buffers);
size_t buffer_bytes(const UOp& buffer);
// Gives `buffer`'s memory back for reuse now (the memory planner: its last reader has run); it is
// also given back when the BUFFER UOp dies.
void release_memory(const UOp& buffer);
// Lends `buffer` host memory that kiln does not own (a NumPy array's): kernels read it in place,
// nothing ever writes it (kernels write only the buffers the scheduler makes), and `release` runs
// once when the BUFFER dies. Only for devices that compute on host memory; throws kiln::Error
// otherwise, or if the buffer already has memory.
void adopt_host_memory(const UOp& buffer, void* ptr, std::function<void()> release);
void copyin(const UOp& buffer, const void* src, size_t bytes);
void copyout(const UOp& buffer, void* dst, size_t bytes);
// Copies `src`'s bytes into `dst`, a buffer of the same size, possibly on another device.
void copy_buffer(const UOp& dst, const UOp& src);

// The device new tensors go to: DEV if set, else the best registered device.
std::string default_device();

// The registered device's canonical name ("cl:0" is "CL"); unknown names are a kiln::Error.
std::string canonical_device(const std::string& device);

// A fresh, unallocated BUFFER UOp.
UOpRef new_buffer(DType dtype, int64_t size, const std::string& device);

}  // namespace kiln::engine
