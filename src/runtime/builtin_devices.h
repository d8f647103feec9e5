#pragma once
// Registers the devices compiled into kiln. device.cpp calls it when the registry is first used;
// an explicit call (instead of static initializers) keeps the linker from dropping the devices
// when kiln is linked statically.

namespace kiln::runtime {

void register_builtin_devices();

}  // namespace kiln::runtime
