#pragma once
// Content hashing for cache keys and checksums that must agree across processes and machines (so
// no std::hash).
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime {

// SHA-256 of data as 64 lowercase hex characters.
std::string content_hash(std::string_view data);

// 64-bit FNV-1a of data: fast, not cryptographic. For checksums that catch damaged files.
uint64_t fnv1a_64(std::string_view data);

}  // namespace kiln::runtime
