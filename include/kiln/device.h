#pragma once
// Adding a device to kiln: the interface a hardware backend implements, and the registry it joins.
//
// kiln turns tensor graphs into kernels in one of its kernel languages and hands a device only
// bytes and source text: a device never sees tensors or graphs. It supplies three parts,
//   Allocator  its memory: alloc / free, and copies between host memory and device memory;
//   Compiler   kernel source (in the language the device names) -> a binary, as a string;
//   Program    one loaded kernel: launch it over some work items with some buffers;
// bundles them in a Device, and registers a factory for it under a name. Tensors then live on it
// when it is the default device (env DEV=<name>, or the highest registered priority).
// examples/custom_device/ is a complete device in one file; its README walks through it.
//
// Errors: throw kiln::Error (kiln/error.h, kiln::throw_error) with a message that says what was
// expected and what happened; kiln passes it on to the user's call that needed the device.
//
// Threading: kiln may call any of these from several threads at once (it compiles the kernels of
// one schedule in parallel, and users may realize tensors from several threads), so each
// implementation guards its own shared state.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

// Device memory as raw bytes. kiln never dereferences what alloc returns: it is an opaque handle
// (a pointer into device memory, or e.g. an OpenCL cl_mem) that kiln passes back unchanged to
// free, copyin, copyout and Program::launch.
struct Allocator {
  virtual ~Allocator() = default;
  // Returns memory for `bytes` bytes (bytes may be 0: still a distinct, freeable handle). Throws
  // kiln::Error when out of memory; kiln then frees the buffers it keeps for reuse and asks again.
  virtual void* alloc(size_t bytes) = 0;
  // Releases memory from alloc; `bytes` is the size it was allocated with. kiln frees each handle
  // once; it may keep freed buffers for reuse, so not every tensor's end is a free.
  virtual void free(void* ptr, size_t bytes) = 0;
  // Host -> device: dst is device memory from alloc, src is host memory. Done when it returns (src
  // may be reused at once).
  virtual void copyin(void* dst, const void* src, size_t bytes) = 0;
  // Device -> host: dst is host memory, src is device memory from alloc. kiln calls
  // Device::synchronize first, so the kernels that wrote src have finished; done when it returns.
  virtual void copyout(void* dst, const void* src, size_t bytes) = 0;
  // Whether the handles from alloc are host addresses that host code may read and write in place
  // (CPU-like devices). Copies between devices then need no staging buffer. Default: false.
  virtual bool host_memory() const { return false; }
};

// Turns kernel source into a device binary. A binary is any string the device's load() accepts:
// the bytes themselves, or the path of a file holding them (cached_build below gives such paths).
struct Compiler {
  virtual ~Compiler();
  // Identifies the toolchain, for logs.
  virtual std::string name() const = 0;
  // The binary for `source`. May be answered from a cache. Throws kiln::Error with the toolchain's
  // diagnostics when the source does not compile.
  virtual std::string compile(const std::string& source) = 0;
  // Like compile, but never answered from a cache: builds `source` again (replacing any cached
  // entry). kiln calls it when a binary compile() returned fails to load.
  virtual std::string recompile(const std::string& source) = 0;
};

// The work-items of a launch by dimension, as OpenCL's NDRange and CUDA's grid: `global` in all,
// `local` per work-group (global is a multiple of local along each dimension). Kernels with
// work-groups (Device::max_local_size() > 1) find their group with get_group_id(0) / blockIdx.x and
// their place in it with get_local_id(d) / threadIdx; the others launch {n, 1, 1} groups of one.
struct LaunchDims {
  std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
};

// A compiled kernel loaded on a device, ready to launch.
struct Program {
  virtual ~Program() = default;
  // Runs the kernel over `global_size` work items with the given buffers (handles from this
  // device's Allocator, in the kernel's parameter order) and integer arguments. With wait == true,
  // returns after the kernel finished and returns the seconds it took; with wait == false it may
  // return at once (then 0, or its time if it ran synchronously).
  //
  // For the "C" language a kernel is `void name(void** bufs, const long long* vals, int core_id)`:
  // bufs[i] is the i-th buffer, vals the integer arguments, and a launch calls it once for every
  // core_id in [0, global_size) (global_size <= Device::max_threads(); 0 means one call), in any
  // order or in parallel; each call does its own share of the work. For "OpenCL", work item i is
  // the kernel's core_id i.
  virtual double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                        bool wait) = 0;
  // Runs the kernel over `dims`. The default serves devices without work-groups: a launch of
  // {n, 1, 1} work-items in groups of one is launch(bufs, vals, n, wait), and anything else throws
  // kiln::Error. Devices whose max_local_size() is above 1 override it.
  virtual double launch_grid(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& dims,
                             bool wait);
};

// What it takes to run kernels somewhere: memory, a compiler and a loader, plus the facts kiln's
// code generator needs. kiln creates a device once, through its registered factory, and uses it
// until the process exits.
class Device {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Canonical upper-case name, e.g. "CPU".
  const std::string& name() const { return name_; }
  // Both live as long as the device.
  virtual Allocator& allocator() = 0;
  virtual Compiler& compiler() = 0;
  // Loads a binary from compiler().compile and finds `function_name` in it. Throws kiln::Error
  // when the binary does not load or lacks the function (kiln then recompiles once and retries).
  virtual std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) = 0;
  // Waits until all queued work (launches with wait == false) has finished. Synchronous devices
  // need not override it.
  virtual void synchronize();
  // How many work items the device runs at once: kiln splits a kernel's outer loop into at most
  // this many core_ids. Default 1.
  virtual int max_threads() const;
  // The widest SIMD register its kernels can use, in bytes; 0 (the default) means scalar code.
  // Above 0, "C" kernels use GNU C vector types (__attribute__((vector_size(N)))) up to that width.
  virtual int vector_bytes() const;
  // How many of those vector registers there are: register tiles are sized to them (three quarters
  // hold accumulators, the rest the loads). Default 16 (x86-64 with AVX2 or SSE); AVX-512 and ARM's
  // NEON have 32.
  virtual int vector_registers() const;
  // The size of its last-level cache in bytes; 0 (the default): unknown. Kernels whose outputs
  // outgrow it store whole cache lines past the caches ("C" kernels: x86's non-temporal stores of
  // 64-byte vectors), as such an output evicts itself before the next kernel reads it; reductions
  // over inputs bigger than it prefetch their next slab (codegen/prefetch.cpp).
  virtual int64_t last_level_cache_bytes() const;
  // The size of one core's L2 cache in bytes; 0 (the default): unknown. What a kernel may keep
  // close to a core across loop iterations (e.g. the panels of a matmul operand).
  virtual int64_t l2_cache_bytes() const;
  // Work-groups: the most work-items one may have, and the local (shared) memory it may use, in
  // bytes. 0 (the default) means none: kernels run as core_ids only and kiln never makes LOCAL or
  // GROUP opts for the device.
  virtual int max_local_size() const;
  virtual int64_t local_memory_bytes() const;
  // Whether kiln's own choice of opts should use those work-groups: true (the default, when it has
  // them) where a group's work-items run side by side (GPUs). A device that runs them one after the
  // other (a CPU-type OpenCL device, PoCL) says false and gets the CPU's loop opts; BEAM search and
  // env LOCALS=1 still use its work-groups.
  virtual bool prefers_work_groups() const;
  // The kernel language its compiler takes, which picks the renderer that writes its kernels:
  // "C" (the default: GNU C for clang or gcc, see Program::launch for the calling convention),
  // "OpenCL" (OpenCL C) or "CUDA" (CUDA C++ for NVRTC). Any other name fails when kiln first
  // compiles a kernel for the device.
  virtual std::string language() const;

 protected:
  explicit Device(std::string name);

 private:
  std::string name_;
};

// Makes a device available as `name` (case-insensitive; stored upper-case). The factory runs on the
// first get_device(name), once, and owns nothing of kiln's; it may throw kiln::Error. Among devices,
// the highest `priority` is the default when env DEV is unset (CPU registers 0, a GPU 10).
// Registering a name again replaces its factory and priority; a device already created under that
// name stays in use. Throws kiln::Error for an empty name or an empty factory.
void register_device(const std::string& name, std::function<std::unique_ptr<Device>()> factory, int priority);

// The device called `name`, created on first request. Case-insensitive, and a ":N" suffix is
// ignored ("cpu:0" is "CPU"). Throws kiln::Error listing the registered devices for unknown names.
Device& get_device(const std::string& name);

// env DEV if set (validated), else the registered device with the highest priority.
std::string default_device();

// Registered device names, sorted.
std::vector<std::string> device_names();

// kiln's on-disk cache of compiled kernels, for a Compiler that wants one: the path of the entry
// for `key` (any string naming everything the binary depends on: source, toolchain, flags) in the
// cache folder of `device` ($KILN_CACHE/<device>, else $XDG_CACHE_HOME/kiln/<device>, else
// ~/.cache/kiln/<device>). When there is no whole entry, or `rebuild` is set, calls
// build(output_path), which must write the binary to output_path (a fresh file in the cache folder)
// or throw kiln::Error; the file then becomes the entry. Entries appear whole or not at all, so
// threads and processes may build at once. An entry is the binary plus a footer that lets kiln
// recognize damaged files; ELF loaders (dlopen) ignore it, so a shared object loads as it is.
std::string cached_build(const std::string& device, const std::string& key, bool rebuild,
                         const std::function<void(const std::string& output_path)>& build);

// The binary an entry from cached_build holds, without its footer: for devices that load bytes.
std::string cached_binary(const std::string& entry_path);

}  // namespace kiln::runtime
