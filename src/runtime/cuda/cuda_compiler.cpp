#include "runtime/cuda/cuda_compiler.h"

#include <cctype>

#include "kiln/error.h"
#include "runtime/cuda/dynamic_library.h"
#include "support/env.h"

namespace kiln::runtime::cuda {
namespace {

// The few NVRTC functions kiln calls, declared from the NVRTC API documentation (kiln includes no
// CUDA header, so it builds without the toolkit). nvrtcResult is an enum: 0 is NVRTC_SUCCESS.
using nvrtcResult = int;
using nvrtcProgram = struct NvrtcProgramOpaque*;

struct Nvrtc {
  DynamicLibrary lib{"NVRTC (libnvrtc, from the CUDA toolkit)",
                     {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so",
                      "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so"}};
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char* source, const char* name, int headers, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;

  Nvrtc() {
    if (!lib.loaded()) return;
    GetErrorString = lib.function<decltype(GetErrorString)>("nvrtcGetErrorString");
    Version = lib.function<decltype(Version)>("nvrtcVersion");
    CreateProgram = lib.function<decltype(CreateProgram)>("nvrtcCreateProgram");
    DestroyProgram = lib.function<decltype(DestroyProgram)>("nvrtcDestroyProgram");
    CompileProgram = lib.function<decltype(CompileProgram)>("nvrtcCompileProgram");
    GetProgramLogSize = lib.function<decltype(GetProgramLogSize)>("nvrtcGetProgramLogSize");
    GetProgramLog = lib.function<decltype(GetProgramLog)>("nvrtcGetProgramLog");
    GetPTXSize = lib.function<decltype(GetPTXSize)>("nvrtcGetPTXSize");
    GetPTX = lib.function<decltype(GetPTX)>("nvrtcGetPTX");
  }

  void check(nvrtcResult r, const char* what) const {
    if (r != 0) throw_error("NVRTC ", what, " failed: ", GetErrorString(r), " (", r, ")");
  }
};

const Nvrtc& nvrtc() {
  static const Nvrtc n;  // opened once per process
  if (!n.lib.loaded()) throw_error("CUDA kernels cannot be compiled: NVRTC was not found (", n.lib.description(), ")");
  return n;
}

// Destroys the program however compiling exits.
struct ProgramHandle {
  const Nvrtc& api;
  nvrtcProgram program = nullptr;
  ~ProgramHandle() {
    if (program) api.DestroyProgram(&program);
  }
};

std::string program_log(const Nvrtc& api, nvrtcProgram program) {
  size_t size = 0;
  if (api.GetProgramLogSize(program, &size) != 0 || size == 0) return "";
  std::string log(size, '\0');
  if (api.GetProgramLog(program, log.data()) != 0) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

bool nvrtc_available() {
  try {
    nvrtc();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string target_arch(const std::string& fallback) {
  std::string arch = env::get_string("CUDA_ARCH", fallback);
  // NVRTC makes PTX for a virtual architecture (compute_XY); sm_XY and XY name the same one.
  std::string digits = arch.rfind("compute_", 0) == 0 ? arch.substr(8)
                       : arch.rfind("sm_", 0) == 0    ? arch.substr(3)
                                                      : arch;
  bool numeric = digits.size() >= 2 && digits.size() <= 4;
  for (char c : digits) numeric &= std::isdigit(static_cast<unsigned char>(c)) != 0;
  if (!numeric) throw_error("CUDA_ARCH=", arch, ": expected an architecture like compute_80, sm_80 or 80");
  return "compute_" + digits;
}

CudaCompiler::CudaCompiler(std::string arch) {
  const Nvrtc& api = nvrtc();
  int major = 0, minor = 0;
  api.check(api.Version(&major, &minor), "nvrtcVersion");
  version_ = std::to_string(major) + "." + std::to_string(minor);
  // -default-device: the plain C helpers the renderers share (half conversions) become device functions.
  options_ = {"--gpu-architecture=" + arch, "-default-device"};
}

std::string CudaCompiler::name() const {
  std::string s = "NVRTC " + version_;
  for (const std::string& o : options_) s += " " + o;
  return s;
}

std::string CudaCompiler::cache_key(const std::string& source) const { return source + '\0' + name(); }

std::string CudaCompiler::compile(const std::string& source) {
  return cached_bytes("cuda", cache_key(source), false, [&] { return build(source); });
}

std::string CudaCompiler::recompile(const std::string& source) {
  return cached_bytes("cuda", cache_key(source), true, [&] { return build(source); });
}

std::string CudaCompiler::build(const std::string& source) {
  const Nvrtc& api = nvrtc();
  ProgramHandle handle{api};
  api.check(api.CreateProgram(&handle.program, source.c_str(), "kernel.cu", 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::vector<const char*> options;
  for (const std::string& o : options_) options.push_back(o.c_str());
  nvrtcResult r = api.CompileProgram(handle.program, static_cast<int>(options.size()), options.data());
  if (r != 0)
    throw_error("CUDA kernel failed to compile with ", name(), " (", api.GetErrorString(r), "):\n",
                program_log(api, handle.program), "\nsource:\n", numbered_source(source));
  size_t size = 0;
  api.check(api.GetPTXSize(handle.program, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  api.check(api.GetPTX(handle.program, ptx.data()), "nvrtcGetPTX");
  ptx.resize(size > 0 ? size - 1 : 0);  // the size counted the terminating NUL
  return ptx;
}

}  // namespace kiln::runtime::cuda
