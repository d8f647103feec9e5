// The CUDA device: a GPU's memory, NVRTC for its kernels and launches over the driver API. Both
// libraries are opened at run time, so kiln needs neither to build.
#include <memory>

#include "runtime/builtin_devices.h"
#include "runtime/cuda/cuda_allocator.h"
#include "runtime/cuda/cuda_compiler.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/device.h"

namespace kiln::runtime {
namespace {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(cuda::CUdevice device)
      : Device("CUDA"),
        ctx_(device),
        allocator_(ctx_),
        // PTX for this GPU's own architecture, unless CUDA_ARCH asks for another.
        compiler_(cuda::target_arch("compute_" + std::to_string(ctx_.compute_major * 10 + ctx_.compute_minor))) {}
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) override {
    return std::make_unique<cuda::CudaProgram>(ctx_, binary, function_name);
  }
  void synchronize() override {
    ctx_.make_current();
    ctx_.driver.check(ctx_.driver.CtxSynchronize(), "cuCtxSynchronize");
  }
  // Enough threads to fill every multiprocessor: the THREAD axis is split into this many shares.
  int max_threads() const override { return ctx_.resident_threads; }
  // The CUDA renderer writes scalar code only.
  int vector_bytes() const override { return 0; }
  std::string language() const override { return "CUDA"; }
  int max_local_size() const override { return cuda::CudaProgram::kMaxBlockThreads; }
  int64_t local_memory_bytes() const override { return cuda::CudaProgram::kSharedMemoryBytes; }

 private:
  cuda::Context ctx_;
  cuda::CudaAllocator allocator_;
  cuda::CudaCompiler compiler_;
};

}  // namespace

void register_cuda_device() {
  std::optional<cuda::CUdevice> device = cuda::find_device();
  // Without a GPU, or without NVRTC to compile for it (a driver without the toolkit), there is no
  // device: the default falls back to the next one instead of failing at first use.
  if (!device || !cuda::nvrtc_available()) return;
  // Above an OpenCL GPU (10): the default is a CUDA GPU, then OpenCL, then the CPU (0).
  register_device("CUDA", [d = *device] { return std::make_unique<CudaDevice>(d); }, 20);
}

}  // namespace kiln::runtime
