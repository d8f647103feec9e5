#include "runtime/opencl/cl_compiler.h"

#include <string>

#include "kiln/error.h"

namespace kiln::runtime::cl {
namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string program_binary(cl_program program) {
  size_t size = 0;
  check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr), "clGetProgramInfo");
  std::string binary(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(binary.data());
  check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr), "clGetProgramInfo");
  return binary;
}

}  // namespace

ClCompiler::ClCompiler(const Context& ctx) : ctx_(ctx) {
  // Division and sqrt as exact as the CPU's, where the device can.
  if (ctx.correctly_rounded_divide_sqrt) options_ = "-cl-fp32-correctly-rounded-divide-sqrt";
}

std::string ClCompiler::name() const { return "OpenCL " + ctx_.device_name + " (" + ctx_.driver_version + ")"; }

std::string ClCompiler::cache_key(const std::string& source) const { return source + '\0' + ctx_.device_name + '\0' + ctx_.driver_version + '\0' + options_; }

std::string ClCompiler::compile(const std::string& source) {
  return cached_bytes("opencl", cache_key(source), false, [&] { return build(source); });
}

std::string ClCompiler::recompile(const std::string& source) {
  return cached_bytes("opencl", cache_key(source), true, [&] { return build(source); });
}

std::string ClCompiler::build(const std::string& source) {
  const char* text = source.c_str();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(ctx_.context, 1, &text, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  err = clBuildProgram(program, 1, &ctx_.device, options_.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = build_log(program, ctx_.device);
    clReleaseProgram(program);
    throw_error("OpenCL kernel failed to build on ", ctx_.device_name, " (", error_name(err), "):\n", log,
                "\nsource:\n", numbered_source(source));
  }
  std::string binary;
  try {
    binary = program_binary(program);
  } catch (...) {
    clReleaseProgram(program);
    throw;
  }
  clReleaseProgram(program);
  return binary;
}

}  // namespace kiln::runtime::cl
