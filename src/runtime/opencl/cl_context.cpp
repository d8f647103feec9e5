#include "runtime/opencl/cl_context.h"

#include <vector>

#include "kiln/error.h"

namespace kiln::runtime::cl {

const char* error_name(cl_int err) {
  switch (err) {
#define KILN_CL_ERROR(name) case name: return #name;
    KILN_CL_ERROR(CL_DEVICE_NOT_FOUND) KILN_CL_ERROR(CL_DEVICE_NOT_AVAILABLE) KILN_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    KILN_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE) KILN_CL_ERROR(CL_OUT_OF_RESOURCES) KILN_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    KILN_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE) KILN_CL_ERROR(CL_MEM_COPY_OVERLAP) KILN_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    KILN_CL_ERROR(CL_MAP_FAILURE) KILN_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET) KILN_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    KILN_CL_ERROR(CL_LINKER_NOT_AVAILABLE) KILN_CL_ERROR(CL_LINK_PROGRAM_FAILURE) KILN_CL_ERROR(CL_INVALID_VALUE)
    KILN_CL_ERROR(CL_INVALID_DEVICE_TYPE) KILN_CL_ERROR(CL_INVALID_PLATFORM) KILN_CL_ERROR(CL_INVALID_DEVICE)
    KILN_CL_ERROR(CL_INVALID_CONTEXT) KILN_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES) KILN_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    KILN_CL_ERROR(CL_INVALID_HOST_PTR) KILN_CL_ERROR(CL_INVALID_MEM_OBJECT) KILN_CL_ERROR(CL_INVALID_BINARY)
    KILN_CL_ERROR(CL_INVALID_BUILD_OPTIONS) KILN_CL_ERROR(CL_INVALID_PROGRAM) KILN_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    KILN_CL_ERROR(CL_INVALID_KERNEL_NAME) KILN_CL_ERROR(CL_INVALID_KERNEL_DEFINITION) KILN_CL_ERROR(CL_INVALID_KERNEL)
    KILN_CL_ERROR(CL_INVALID_ARG_INDEX) KILN_CL_ERROR(CL_INVALID_ARG_VALUE) KILN_CL_ERROR(CL_INVALID_ARG_SIZE)
    KILN_CL_ERROR(CL_INVALID_KERNEL_ARGS) KILN_CL_ERROR(CL_INVALID_WORK_DIMENSION) KILN_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    KILN_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE) KILN_CL_ERROR(CL_INVALID_GLOBAL_OFFSET) KILN_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    KILN_CL_ERROR(CL_INVALID_EVENT) KILN_CL_ERROR(CL_INVALID_OPERATION) KILN_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    KILN_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE) KILN_CL_ERROR(CL_INVALID_PROPERTY) KILN_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    KILN_CL_ERROR(CL_INVALID_LINKER_OPTIONS) KILN_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef KILN_CL_ERROR
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";  // the ICD loader found no platform
    default: return "unknown OpenCL error";
  }
}

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) throw_error("OpenCL ", what, " failed: ", error_name(err), " (", err, ")");
}

namespace {

std::string device_string(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  check(clGetDeviceInfo(device, param, 0, nullptr, &size), "clGetDeviceInfo");
  std::string s(size, '\0');
  check(clGetDeviceInfo(device, param, size, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id device, cl_device_info param) {
  T value{};
  check(clGetDeviceInfo(device, param, sizeof value, &value, nullptr), "clGetDeviceInfo");
  return value;
}

}  // namespace

std::optional<DeviceChoice> find_device() {
  cl_uint n_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &n_platforms) != CL_SUCCESS || n_platforms == 0) return std::nullopt;
  std::vector<cl_platform_id> platforms(n_platforms);
  if (clGetPlatformIDs(n_platforms, platforms.data(), nullptr) != CL_SUCCESS) return std::nullopt;
  for (cl_device_type type : {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}}) {
    for (cl_platform_id p : platforms) {
      cl_device_id device = nullptr;
      if (clGetDeviceIDs(p, type, 1, &device, nullptr) == CL_SUCCESS && device)
        return DeviceChoice{device, type == CL_DEVICE_TYPE_GPU};
    }
  }
  return std::nullopt;
}

Context::Context(const DeviceChoice& choice) : device(choice.device), is_gpu(choice.is_gpu) {
  device_name = device_string(device, CL_DEVICE_NAME);
  driver_version = device_string(device, CL_DRIVER_VERSION);
  compute_units = static_cast<int>(device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS));
  max_work_group_size = static_cast<int>(device_value<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  local_memory_bytes = static_cast<int64_t>(device_value<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE));
  correctly_rounded_divide_sqrt =
      device_value<cl_device_fp_config>(device, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT;
  cl_int err = CL_SUCCESS;
  context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  queue = clCreateCommandQueue(context, device, 0, &err);
  if (err != CL_SUCCESS) clReleaseContext(context);
  check(err, "clCreateCommandQueue");
}

Context::~Context() {
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

}  // namespace kiln::runtime::cl
