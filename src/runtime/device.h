#pragma once
// A Device bundles what it takes to run kernels somewhere: memory, a compiler and a loader.
// Devices are registered by name with a factory; get_device creates each one lazily, once.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/compiler.h"
#include "runtime/program.h"

namespace kiln::runtime {

class Device {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Canonical upper-case name, e.g. "CPU".
  const std::string& name() const { return name_; }
  virtual Allocator& allocator() = 0;
  virtual Compiler& compiler() = 0;
  // Loads a binary from compiler().compile and finds `function_name` in it.
  virtual std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) = 0;
  // Waits until all queued work has finished. Synchronous devices need not override it.
  virtual void synchronize();
  // How many work items the device runs at once (the thread count on CPU).
  virtual int max_threads() const;
  // The widest SIMD register its kernels can use, in bytes (0: no vector types).
  virtual int vector_bytes() const;
  // The language its compiler takes, naming the renderer that writes its kernels ("C", "OpenCL").
  virtual std::string language() const;

 protected:
  explicit Device(std::string name);

 private:
  std::string name_;
};

// dev.load(binary, function_name) for a binary from dev.compiler().compile(source). A binary that
// does not load is compiled again once (replacing its cache entry) and the new one loaded: an
// entry can pass the cache's checks and still not load, e.g. a foreign file under a valid footer.
std::unique_ptr<Program> load_compiled(Device& dev, const std::string& binary, const std::string& source,
                                       const std::string& function_name);

// Makes a device available as `name` (case-insensitive). Registering a name again replaces its
// factory and priority; a device already created under that name stays in use.
void register_device(const std::string& name, std::function<std::unique_ptr<Device>()> factory, int priority);

// The device called `name`, created on first request. Case-insensitive, and a ":N" suffix is
// ignored ("cpu:0" is "CPU"). Throws kiln::Error listing the registered devices for unknown names.
Device& get_device(const std::string& name);

// env DEV if set (validated), else the registered device with the highest priority.
std::string default_device();

// Registered device names, sorted.
std::vector<std::string> device_names();

}  // namespace kiln::runtime
