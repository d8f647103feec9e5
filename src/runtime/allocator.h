#pragma once
// Device memory as raw bytes: kiln::runtime::Allocator, defined in the public interface for
// devices (kiln/device.h) so devices outside the library implement the same one.
#include "kiln/device.h"
