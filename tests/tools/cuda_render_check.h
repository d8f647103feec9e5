#pragma once
// Checks the CUDA renderer on machines without a GPU: every kernel the engine compiles for its real
// device is also rendered as CUDA C++ for an A100 and compiled with NVRTC (never run), through the
// engine's kernel check (engine::set_kernel_check). A kernel NVRTC rejects fails its schedule like
// a failed compile for the real device.
//
// Linked into the op, fusion and fuzz suites: with CHECK_RENDER=CUDA in the environment (ctest's
// *_cuda_compile entries) the check is on for the whole run.
#include <string>

namespace kt {

// Turns the check on for `language` (only "CUDA" is known). Throws kiln::Error for any other
// language, or when NVRTC cannot be loaded.
void check_render(const std::string& language);
// Turns it off again.
void stop_check_render();

}  // namespace kt
