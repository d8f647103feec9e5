#pragma once
// Checks every device's allocator must pass, shared by the per-device tests.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/allocator.h"

namespace kt {

// 1000 floats copied in and out come back unchanged, and a 0-byte allocation is a distinct, valid one.
inline void expect_memory_round_trip(kiln::runtime::Allocator& a) {
  std::vector<float> in(1000), out(1000, -1);
  for (size_t i = 0; i < in.size(); i++) in[i] = 0.5f * static_cast<float>(i);
  void* mem = a.alloc(in.size() * sizeof(float));
  a.copyin(mem, in.data(), in.size() * sizeof(float));
  a.copyout(out.data(), mem, out.size() * sizeof(float));
  a.free(mem, in.size() * sizeof(float));
  EXPECT_EQ(in, out);
  void* empty = a.alloc(0);
  EXPECT_NE(empty, nullptr);
  a.free(empty, 0);
}

}  // namespace kt
