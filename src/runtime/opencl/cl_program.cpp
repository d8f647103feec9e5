#include "runtime/opencl/cl_program.h"

#include <algorithm>
#include <chrono>

#include "kiln/error.h"

namespace kiln::runtime::cl {

ClProgram::ClProgram(const Context& ctx, const std::string& binary, const std::string& function_name,
                     const std::string& options)
    : ctx_(ctx), name_(function_name) {
  const size_t size = binary.size();
  const unsigned char* data = reinterpret_cast<const unsigned char*>(binary.data());
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  program_ = clCreateProgramWithBinary(ctx.context, 1, &ctx.device, &size, &data, &status, &err);
  check(err, "clCreateProgramWithBinary");
  err = clBuildProgram(program_, 1, &ctx.device, options.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS) kernel_ = clCreateKernel(program_, function_name.c_str(), &err);
  cl_uint args = 0;
  if (err == CL_SUCCESS) err = clGetKernelInfo(kernel_, CL_KERNEL_NUM_ARGS, sizeof args, &args, nullptr);
  args_ = args;
  if (err != CL_SUCCESS) {
    if (kernel_) clReleaseKernel(kernel_);
    clReleaseProgram(program_);
    throw_error("could not load OpenCL kernel '", function_name, "' from its ", size, "-byte binary: ", error_name(err));
  }
}

ClProgram::~ClProgram() {
  clReleaseKernel(kernel_);
  clReleaseProgram(program_);
}

double ClProgram::launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                         bool wait) {
  // Work-groups of one: the shares are big loops, and separate groups run on separate cores.
  return launch_grid(bufs, vals, LaunchDims{{std::max<int64_t>(global_size, 1), 1, 1}, {1, 1, 1}}, wait);
}

double ClProgram::launch_grid(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& dims,
                              bool wait) {
  if (!vals.empty()) throw_error("OpenCL kernel ", name_, ": expected no integer arguments, got ", vals.size());
  std::lock_guard lock(mu_);
  // Buffers past the kernel's arguments are ones it no longer reads (simplified away).
  if (bufs.size() < args_) throw_error("OpenCL kernel ", name_, ": expected ", args_, " buffers, got ", bufs.size());
  for (size_t i = 0; i < args_; i++) {
    cl_mem mem = static_cast<cl_mem>(bufs[i]);
    check(clSetKernelArg(kernel_, static_cast<cl_uint>(i), sizeof mem, &mem), "clSetKernelArg");
  }
  size_t global[3], local[3];
  cl_uint work_dims = 1;
  for (cl_uint d = 0; d < 3; d++) {
    if (dims.global[d] < 1 || dims.local[d] < 1 || dims.global[d] % dims.local[d] != 0)
      throw_error("OpenCL kernel ", name_, ": expected global sizes that are positive multiples of the local sizes, got ",
                  dims.global[d], " and ", dims.local[d], " along dimension ", d);
    global[d] = static_cast<size_t>(dims.global[d]);
    local[d] = static_cast<size_t>(dims.local[d]);
    if (global[d] > 1) work_dims = d + 1;
  }
  auto start = std::chrono::steady_clock::now();
  check(clEnqueueNDRangeKernel(ctx_.queue, kernel_, work_dims, nullptr, global, local, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  if (!wait) return 0;
  check(clFinish(ctx_.queue), "clFinish");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kiln::runtime::cl
