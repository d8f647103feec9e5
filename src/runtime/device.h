#pragma once
// Devices and their registry: the interface is public (kiln/device.h), so devices outside the
// library implement the same one. What only kiln itself uses is declared here.
#include <memory>
#include <string>

#include "kiln/device.h"
#include "runtime/compiler.h"  // compile_stats()

namespace kiln::runtime {

// dev.load(binary, function_name) for a binary from dev.compiler().compile(source). A binary that
// does not load is compiled again once (replacing its cache entry) and the new one loaded: an
// entry can pass the cache's checks and still not load, e.g. a foreign file under a valid footer.
std::unique_ptr<Program> load_compiled(Device& dev, const std::string& binary, const std::string& source,
                                       const std::string& function_name);

}  // namespace kiln::runtime
