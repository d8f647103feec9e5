#include "runtime/opencl/cl_compiler.h"

#include <string>

#include "kiln/error.h"
#include "runtime/disk_cache.h"
#include "support/hash.h"

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

std::string ClCompiler::cache_path(const std::string& source) const {
  std::string key = content_hash(source + '\0' + ctx_.device_name + '\0' + ctx_.driver_version + '\0' + options_);
  return disk_cache::entry_path(disk_cache::folder("opencl"), key, ".bin").string();
}

std::string ClCompiler::compile(const std::string& source) {
  std::string path = cache_path(source);
  if (disk_cache::holds(path)) {
    ++compile_stats().cache_hits;
    return disk_cache::payload(path);
  }
  return build(source, path);
}

std::string ClCompiler::recompile(const std::string& source) { return build(source, cache_path(source)); }

std::string ClCompiler::build(const std::string& source, const std::string& path) {
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
  disk_cache::store(path, binary);
  ++compile_stats().compiled;
  return binary;
}

}  // namespace kiln::runtime::cl
