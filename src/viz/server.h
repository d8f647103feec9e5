#pragma once
// The VIZ web server: the page (embedded web/ files) and its JSON API, on 127.0.0.1 only.
//   /                 the page          /api/traces     rewrites and kernels, grouped by context
//   /api/trace/<id>   one rewrite       /api/kernels    kernel sources     /api/schedule  schedules
#include <string>

namespace kiln::viz {

// The port from VIZ_PORT ("" when unset). Throws kiln::Error unless it is a number in 1..65535.
int parse_port(const std::string& text);

// Serves until the process is interrupted (Ctrl-C). Binds VIZ_PORT if set, else the first free
// port from 8000 on, and prints the page's URL on stderr once listening. Throws kiln::Error when
// it cannot listen.
void serve();

}  // namespace kiln::viz
