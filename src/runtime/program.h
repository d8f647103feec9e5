#pragma once
// A compiled kernel loaded on a device: kiln::runtime::Program, defined in the public interface
// for devices (kiln/device.h) so devices outside the library implement the same one.
#include "kiln/device.h"
