#pragma once
// What every part of the CUDA device shares: the driver API (libcuda, opened at run time), one GPU
// and its primary context. Work goes to the legacy default stream, so copies and launches run in
// the order they were issued, and a blocking copy sees the results of the launches before it.
#include <cstddef>
#include <optional>
#include <string>

#include "runtime/cuda/dynamic_library.h"

namespace kiln::runtime::cuda {

// The driver API's types and the few functions kiln calls, declared from the CUDA driver API
// documentation (kiln includes no CUDA header, so it builds without the toolkit). Where cuda.h
// maps a name to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2), the versioned one is loaded.
using CUresult = int;  // 0 is CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

// CUdevice_attribute and CUfunction_attribute values kiln asks for.
enum : int {
  kAttrMultiprocessorCount = 16,
  kAttrMaxThreadsPerMultiprocessor = 39,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kFuncAttrMaxThreadsPerBlock = 0,
};

struct Driver {
  DynamicLibrary lib{"the CUDA driver (libcuda)", {"libcuda.so.1", "libcuda.so"}};
  CUresult (*Init)(unsigned flags) = nullptr;
  CUresult (*GetErrorName)(CUresult, const char** name) = nullptr;
  CUresult (*DeviceGetCount)(int* count) = nullptr;
  CUresult (*DeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*DeviceGetName)(char* name, int length, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int* value, int attribute, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext* context, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes) = nullptr;
  CUresult (*MemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*ModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction* function, CUmodule, const char* name) = nullptr;
  CUresult (*FuncGetAttribute)(int* value, int attribute, CUfunction) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                           unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream, void** params,
                           void** extra) = nullptr;

  Driver();  // loads the functions if the library loaded
  // "CUDA_ERROR_OUT_OF_MEMORY" for 2; "unknown CUDA error" for codes the driver does not name.
  const char* error_name(CUresult r) const;
  // Throws kiln::Error "CUDA <what> failed: <name> (<code>)" unless r is CUDA_SUCCESS.
  void check(CUresult r, const char* what) const;
};

// The first GPU, with the driver initialized; nullopt when libcuda does not load, cuInit fails (no
// driver for the hardware) or there is no GPU.
std::optional<CUdevice> find_device();

struct Context {
  explicit Context(CUdevice device);  // throws kiln::Error if the driver refuses
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Driver calls act on the calling thread's current context: every entry point of the device
  // calls this first, as the engine may call from any thread.
  void make_current() const;

  const Driver& driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string device_name;
  int compute_major = 0, compute_minor = 0;
  int resident_threads = 1;  // multiprocessors x threads each can hold
};

}  // namespace kiln::runtime::cuda
