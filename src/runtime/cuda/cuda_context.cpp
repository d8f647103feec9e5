#include "runtime/cuda/cuda_context.h"

#include "kiln/error.h"

namespace kiln::runtime::cuda {

Driver::Driver() {
  if (!lib.loaded()) return;
  Init = lib.function<decltype(Init)>("cuInit");
  GetErrorName = lib.function<decltype(GetErrorName)>("cuGetErrorName");
  DeviceGetCount = lib.function<decltype(DeviceGetCount)>("cuDeviceGetCount");
  DeviceGet = lib.function<decltype(DeviceGet)>("cuDeviceGet");
  DeviceGetName = lib.function<decltype(DeviceGetName)>("cuDeviceGetName");
  DeviceGetAttribute = lib.function<decltype(DeviceGetAttribute)>("cuDeviceGetAttribute");
  DevicePrimaryCtxRetain = lib.function<decltype(DevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  DevicePrimaryCtxRelease = lib.function<decltype(DevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease_v2");
  CtxSetCurrent = lib.function<decltype(CtxSetCurrent)>("cuCtxSetCurrent");
  CtxSynchronize = lib.function<decltype(CtxSynchronize)>("cuCtxSynchronize");
  MemAlloc = lib.function<decltype(MemAlloc)>("cuMemAlloc_v2");
  MemFree = lib.function<decltype(MemFree)>("cuMemFree_v2");
  MemcpyHtoD = lib.function<decltype(MemcpyHtoD)>("cuMemcpyHtoD_v2");
  MemcpyDtoH = lib.function<decltype(MemcpyDtoH)>("cuMemcpyDtoH_v2");
  ModuleLoadData = lib.function<decltype(ModuleLoadData)>("cuModuleLoadData");
  ModuleUnload = lib.function<decltype(ModuleUnload)>("cuModuleUnload");
  ModuleGetFunction = lib.function<decltype(ModuleGetFunction)>("cuModuleGetFunction");
  FuncGetAttribute = lib.function<decltype(FuncGetAttribute)>("cuFuncGetAttribute");
  LaunchKernel = lib.function<decltype(LaunchKernel)>("cuLaunchKernel");
}

const char* Driver::error_name(CUresult r) const {
  const char* name = nullptr;
  return GetErrorName(r, &name) == 0 && name ? name : "unknown CUDA error";
}

void Driver::check(CUresult r, const char* what) const {
  if (r != 0) throw_error("CUDA ", what, " failed: ", error_name(r), " (", r, ")");
}

namespace {

// The driver with cuInit done, or nullptr where it cannot run (missing library or functions, no
// driver for the hardware, no GPU).
const Driver* initialized_driver() {
  static const Driver* const driver = []() -> const Driver* {
    static const Driver d;
    try {
      if (!d.lib.loaded() || d.Init(0) != 0) return nullptr;
    } catch (const Error&) {  // a driver without a function kiln calls
      return nullptr;
    }
    return &d;
  }();
  return driver;
}

const Driver& usable_driver() {
  if (const Driver* d = initialized_driver()) return *d;
  throw_error("the CUDA driver cannot run here (libcuda not found, or cuInit failed)");
}

}  // namespace

std::optional<CUdevice> find_device() {
  const Driver* d = initialized_driver();
  int count = 0;
  CUdevice device = 0;
  if (!d || d->DeviceGetCount(&count) != 0 || count == 0 || d->DeviceGet(&device, 0) != 0) return std::nullopt;
  return device;
}

Context::Context(CUdevice dev) : driver(usable_driver()), device(dev) {
  char name[256] = {};
  driver.check(driver.DeviceGetName(name, sizeof name, device), "cuDeviceGetName");
  device_name = name;
  auto attribute = [&](int which) {
    int value = 0;
    driver.check(driver.DeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
    return value;
  };
  compute_major = attribute(kAttrComputeCapabilityMajor);
  compute_minor = attribute(kAttrComputeCapabilityMinor);
  resident_threads = attribute(kAttrMultiprocessorCount) * attribute(kAttrMaxThreadsPerMultiprocessor);
  // The primary context is the one the runtime API (cudaMalloc, PyTorch) uses too, so kiln shares it.
  driver.check(driver.DevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
}

Context::~Context() { driver.DevicePrimaryCtxRelease(device); }

void Context::make_current() const { driver.check(driver.CtxSetCurrent(context), "cuCtxSetCurrent"); }

}  // namespace kiln::runtime::cuda
