#pragma once
// Registers the devices compiled into kiln. device.cpp calls it when the registry is first used;
// an explicit call (instead of static initializers) keeps the linker from dropping the devices
// when kiln is linked statically.

namespace kiln::runtime {

void register_builtin_devices();

// Each device's own registration (cpu_device.cpp, opencl/cl_device.cpp, cuda/cuda_device.cpp).
void register_cpu_device();
void register_opencl_device();  // only when kiln is built with OpenCL; registers nothing without a device
void register_cuda_device();    // registers nothing without the CUDA driver (libcuda), a GPU and NVRTC

}  // namespace kiln::runtime
