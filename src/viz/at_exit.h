#pragma once
// What PROFILE=1 and VIZ=1 do when the program's work is done: at exit, the profile trace is
// written (its path printed), then the VIZ page is served until Ctrl-C.
namespace kiln::viz {

// Registers the exit hook once, if PROFILE or VIZ is on; the engine calls it before running
// anything.
void install_exit_hook();

}  // namespace kiln::viz
