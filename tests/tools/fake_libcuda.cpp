// A stand-in for the CUDA driver (libcuda.so.1) on machines without a GPU, so the CUDA device's
// runtime code runs somewhere: one "GPU" whose memory is host memory, modules that must be PTX
// with the requested entry, and launches that run nothing but are recorded for the test
// (test_cuda_fake_driver.cpp) to read back with fake_cuda_last_launch. Loaded only by the
// cuda_fake_driver ctest entry, through LD_LIBRARY_PATH.
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kNotFound = 500, kInvalidImage = 200;

struct Module {
  std::string ptx;
};

struct Launch {
  unsigned grid = 0, block = 0;
  void* params[4] = {};  // the values of the first four arguments (device pointers)
  int count = 0;
};
Launch last_launch;

int fake_context;  // the primary context's handle points here

// A function handle points at its ".entry name(" in the module's PTX; its parameters are the
// ".param"s up to the closing parenthesis.
int parameter_count(const char* entry) {
  std::string signature(entry, std::strchr(entry, ')'));
  int n = 0;
  for (size_t at = signature.find(".param"); at != std::string::npos; at = signature.find(".param", at + 1)) n++;
  return n;
}

}  // namespace

extern "C" {

// For the test: the last launch's geometry and first arguments, and how many launches there were.
void fake_cuda_last_launch(unsigned* grid, unsigned* block, void** params, int* launches) {
  *grid = last_launch.grid;
  *block = last_launch.block;
  std::memcpy(params, last_launch.params, sizeof last_launch.params);
  *launches = last_launch.count;
}

// NVRTC itself asks the driver for its private tables when one is loaded; the fake has none.
int cuGetExportTable(const void** table, const void*) { return *table = nullptr, kNotFound; }
int cuInit(unsigned flags) { return flags == 0 ? kSuccess : kInvalidValue; }
int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
    case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; return kSuccess;
    case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; return kSuccess;
    default: *name = nullptr; return kInvalidValue;
  }
}
int cuDeviceGetCount(int* count) { return *count = 1, kSuccess; }
int cuDeviceGet(int* device, int ordinal) { return ordinal == 0 ? (*device = 0, kSuccess) : kInvalidValue; }
int cuDeviceGetName(char* name, int length, int) {
  std::strncpy(name, "kiln fake GPU", static_cast<size_t>(length));
  return kSuccess;
}
int cuDeviceGetAttribute(int* value, int attribute, int) {
  switch (attribute) {
    case 16: *value = 2; return kSuccess;     // multiprocessors
    case 39: *value = 1024; return kSuccess;  // threads per multiprocessor
    case 75: *value = 8; return kSuccess;     // compute capability 8.6
    case 76: *value = 6; return kSuccess;
    default: return kInvalidValue;
  }
}
int cuDevicePrimaryCtxRetain(void** context, int) { return *context = &fake_context, kSuccess; }
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuCtxSetCurrent(void* context) { return context == &fake_context ? kSuccess : kInvalidValue; }
int cuCtxSynchronize() { return kSuccess; }
int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  if (bytes == 0) return kInvalidValue;  // as the real driver
  *ptr = reinterpret_cast<unsigned long long>(std::malloc(bytes));
  return kSuccess;
}
int cuMemFree_v2(unsigned long long ptr) { return std::free(reinterpret_cast<void*>(ptr)), kSuccess; }
int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t bytes) {
  return std::memcpy(reinterpret_cast<void*>(dst), src, bytes), kSuccess;
}
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes) {
  return std::memcpy(dst, reinterpret_cast<const void*>(src), bytes), kSuccess;
}
int cuModuleLoadData(Module** module, const void* image) {
  std::string ptx = static_cast<const char*>(image);
  if (ptx.find(".version") == std::string::npos || ptx.find(".entry") == std::string::npos) return kInvalidImage;
  *module = new Module{ptx};
  return kSuccess;
}
int cuModuleUnload(Module* module) { return delete module, kSuccess; }
int cuModuleGetFunction(const char** function, Module* module, const char* name) {
  size_t at = module->ptx.find(".entry " + std::string(name) + "(");
  if (at == std::string::npos) return kNotFound;
  *function = module->ptx.c_str() + at;
  return kSuccess;
}
int cuFuncGetAttribute(int* value, int attribute, const char*) {
  return attribute == 0 ? (*value = 1024, kSuccess) : kInvalidValue;  // max threads per block
}
int cuLaunchKernel(const char* function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                   unsigned block_y, unsigned block_z, unsigned shared_bytes, void* stream, void** params,
                   void** extra) {
  // kiln launches 1-D grids on the default stream, without shared memory or packed arguments
  if (grid_y != 1 || grid_z != 1 || block_y != 1 || block_z != 1 || shared_bytes || stream || extra)
    return kInvalidValue;
  last_launch.grid = grid_x;
  last_launch.block = block_x;
  const int n = parameter_count(function);
  for (int i = 0; i < n && i < 4; i++) std::memcpy(&last_launch.params[i], params[i], sizeof(void*));
  last_launch.count++;
  return kSuccess;
}

}  // extern "C"
