#pragma once
// Content hashing for cache keys that must agree across processes and machines (so no std::hash).
#include <string>
#include <string_view>

namespace kiln::runtime {

// SHA-256 of data as 64 lowercase hex characters.
std::string content_hash(std::string_view data);

}  // namespace kiln::runtime
