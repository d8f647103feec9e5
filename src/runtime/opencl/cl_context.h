#pragma once
// The OpenCL objects every part of the CL device shares: one device, its context and one in-order
// command queue (so a read after a launch sees the launch's results).
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <optional>
#include <string>

namespace kiln::runtime::cl {

// "CL_OUT_OF_RESOURCES" for -5; "unknown OpenCL error" for codes it does not know.
const char* error_name(cl_int err);
// Throws kiln::Error "OpenCL <what> failed: <name> (<code>)" unless err is CL_SUCCESS.
void check(cl_int err, const char* what);

// A device found on the machine, before anything is opened on it.
struct DeviceChoice {
  cl_device_id device = nullptr;
  bool is_gpu = false;
};
// The first GPU of any platform, else the first device of any type; nullopt when the machine has
// no OpenCL platform or device (the ICD loader finds none).
std::optional<DeviceChoice> find_device();

struct Context {
  explicit Context(const DeviceChoice& choice);  // throws kiln::Error if OpenCL refuses
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string device_name, driver_version;
  bool is_gpu = false;
  int compute_units = 1;
  int max_work_group_size = 1;   // work-items per work-group
  int64_t local_memory_bytes = 0;  // __local memory per work-group
  bool correctly_rounded_divide_sqrt = false;  // may build with -cl-fp32-correctly-rounded-divide-sqrt
};

}  // namespace kiln::runtime::cl
