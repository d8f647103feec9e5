// The CL device: an OpenCL device's memory, its OpenCL C compiler and its kernels.
#include <memory>

#include "runtime/builtin_devices.h"
#include "runtime/device.h"
#include "runtime/opencl/cl_allocator.h"
#include "runtime/opencl/cl_compiler.h"
#include "runtime/opencl/cl_program.h"

namespace kiln::runtime {
namespace {

class ClDevice final : public Device {
 public:
  explicit ClDevice(const cl::DeviceChoice& choice) : Device("CL"), ctx_(choice), allocator_(ctx_), compiler_(ctx_) {}
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) override {
    return std::make_unique<cl::ClProgram>(ctx_, binary, function_name, compiler_.options());
  }
  void synchronize() override { cl::check(clFinish(ctx_.queue), "clFinish"); }
  int max_threads() const override { return ctx_.compute_units; }
  // The OpenCL renderer writes scalar code only, for now.
  int vector_bytes() const override { return 0; }
  std::string language() const override { return "OpenCL"; }
  int max_local_size() const override { return ctx_.max_work_group_size; }
  int64_t local_memory_bytes() const override { return ctx_.local_memory_bytes; }
  // PoCL runs a group's work-items one after the other on a core: loops suit it better.
  bool prefers_work_groups() const override { return ctx_.is_gpu; }

 private:
  cl::Context ctx_;
  cl::ClAllocator allocator_;
  cl::ClCompiler compiler_;
};

}  // namespace

void register_opencl_device() {
  std::optional<cl::DeviceChoice> choice = cl::find_device();
  if (!choice) return;  // no OpenCL platform or device on this machine
  // The default prefers a GPU, then OpenCL, then the CPU device. But a CPU-type OpenCL device
  // (PoCL) runs the same cores as the CPU device, with a slower launch and scalar kernels: it
  // ranks below CPU, so it runs only when asked for with DEV=CL.
  register_device("CL", [c = *choice] { return std::make_unique<ClDevice>(c); }, choice->is_gpu ? 10 : -10);
}

}  // namespace kiln::runtime
