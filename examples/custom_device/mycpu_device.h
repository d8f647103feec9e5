#pragma once
// MYCPU, a kiln device defined outside the library (mycpu_device.cpp).

namespace mycpu {

// Makes the device available to kiln as "MYCPU". Above CPU's priority (0) it becomes the default
// device unless env DEV names another.
void register_mycpu(int priority);

}  // namespace mycpu
