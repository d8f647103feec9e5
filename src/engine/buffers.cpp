#include "engine/buffers.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/counters.h"
#include "kiln/error.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "support/env.h"
#include "support/profile.h"

namespace kiln::engine {
namespace {

// Freed memory kept for reuse is given back to the device beyond this.
constexpr int64_t kMaxCachedBytes = int64_t{2} << 30;

struct Allocation {
  runtime::Device* device;
  void* ptr;
  size_t bytes;
  std::function<void()> release;  // memory lent to kiln (adopt_host_memory): how to give it back
};

struct Store {
  std::mutex mu;
  std::unordered_map<int64_t, Allocation> by_id;
  // Freed memory kept for reuse by size: fresh pages cost a page fault each on first touch, which
  // for a large output costs as much as the kernel itself (tinygrad's LRU allocator does the same).
  using Shelf = std::pair<runtime::Device*, size_t>;  // device, bytes
  struct ShelfHash {
    size_t operator()(const Shelf& s) const {
      return std::hash<const void*>()(s.first) ^ std::hash<size_t>()(s.second) * 31;
    }
  };
  std::unordered_map<Shelf, std::vector<void*>, ShelfHash> free_list;
  int64_t cached_bytes = 0;

  void* take(runtime::Device& dev, size_t bytes) {
    auto it = free_list.find({&dev, bytes});
    if (it != free_list.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes -= static_cast<int64_t>(bytes);
      return p;
    }
    try {
      return dev.allocator().alloc(bytes);
    } catch (const Error&) {
      release_cache();  // out of memory: give the cache back and try once more
      return dev.allocator().alloc(bytes);
    }
  }

  // A full cache turns memory away rather than dropping what it holds: emptied whole, the next
  // step would fault in all of its pages again.
  void keep_or_free(runtime::Device& dev, void* p, size_t bytes) {
    if (cached_bytes + static_cast<int64_t>(bytes) > kMaxCachedBytes) return dev.allocator().free(p, bytes);
    free_list[{&dev, bytes}].push_back(p);
    cached_bytes += static_cast<int64_t>(bytes);
  }

  void release_cache() {
    for (auto& [key, ptrs] : free_list)
      for (void* p : ptrs) key.first->allocator().free(p, key.second);
    free_list.clear();
    cached_bytes = 0;
  }
};

Store& store() {
  static Store* s = [] {
    on_uop_release(Ops::BUFFER, release_memory);
    return new Store();  // never destroyed: BUFFERs may be released during static teardown
  }();
  return *s;
}

}  // namespace

void release_memory(const UOp& buffer) {
  if (buffer.arg_as<BufferArg>().device == "REG") return;
  Store& s = store();
  std::function<void()> give_back;
  {
    std::lock_guard lock(s.mu);
    auto it = s.by_id.find(buffer.arg_as<BufferArg>().id);
    if (it == s.by_id.end()) return;
    if (it->second.release) {
      give_back = std::move(it->second.release);
    } else {
      s.keep_or_free(*it->second.device, it->second.ptr, it->second.bytes);
      GlobalCounters::mem_used -= static_cast<int64_t>(it->second.bytes);
    }
    if (env::debug_level() >= 7) fprintf(stderr, "free buffer %lld (%zu bytes)\n", (long long)it->first, it->second.bytes);
    s.by_id.erase(it);
  }
  // outside the lock: giving memory back may take another lock (Python's GIL)
  if (give_back) give_back();
}

void adopt_host_memory(const UOp& buffer, void* ptr, std::function<void()> release) {
  const BufferArg& arg = buffer.arg_as<BufferArg>();
  runtime::Device& dev = runtime::get_device(arg.device);
  if (!dev.allocator().host_memory())
    throw_error("adopt_host_memory: device ", dev.name(), " does not compute on host memory; copy the data in instead");
  Store& s = store();
  std::lock_guard lock(s.mu);
  if (!s.by_id.emplace(arg.id, Allocation{&dev, ptr, buffer_bytes(buffer), std::move(release)}).second)
    throw_error("adopt_host_memory: buffer ", arg.id, " already has memory");
}

size_t buffer_bytes(const UOp& buffer) {
  return static_cast<size_t>(buffer.arg_as<BufferArg>().size) * buffer.dtype.itemsize();
}

namespace {

// buffer_address with s.mu held.
void* address_locked(Store& s, const UOp& buffer) {
  if (buffer.op != Ops::BUFFER) throw_error("buffer_address: expected a BUFFER, got ", op_name(buffer.op));
  const BufferArg& arg = buffer.arg_as<BufferArg>();
  auto it = s.by_id.find(arg.id);
  if (it != s.by_id.end()) return it->second.ptr;
  runtime::Device& dev = runtime::get_device(arg.device);
  size_t bytes = buffer_bytes(buffer);
  void* ptr = s.take(dev, bytes);
  GlobalCounters::mem_used += static_cast<int64_t>(bytes);
  GlobalCounters::mem_peak = std::max(GlobalCounters::mem_peak, GlobalCounters::mem_used);
  if (env::debug_level() >= 7) fprintf(stderr, "alloc buffer %lld (%zu bytes) on %s\n", (long long)arg.id, bytes, arg.device.c_str());
  s.by_id.emplace(arg.id, Allocation{&dev, ptr, bytes, {}});
  return ptr;
}

}  // namespace

void* buffer_address(const UOp& buffer) {
  Store& s = store();
  std::lock_guard lock(s.mu);
  return address_locked(s, buffer);
}

std::vector<void*> buffer_addresses(std::span<const UOp* const> buffers) {
  std::vector<void*> out;
  out.reserve(buffers.size());
  Store& s = store();
  std::lock_guard lock(s.mu);
  for (const UOp* b : buffers) out.push_back(address_locked(s, *b));
  return out;
}

void copyin(const UOp& buffer, const void* src, size_t bytes) {
  if (bytes != buffer_bytes(buffer)) throw_error("copyin: buffer holds ", buffer_bytes(buffer), " bytes, got ", bytes);
  profile::Scope timed("copy", "copyin", static_cast<int64_t>(bytes));
  void* dst = buffer_address(buffer);
  runtime::get_device(buffer.arg_as<BufferArg>().device).allocator().copyin(dst, src, bytes);
}

void copyout(const UOp& buffer, void* dst, size_t bytes) {
  if (bytes != buffer_bytes(buffer)) throw_error("copyout: buffer holds ", buffer_bytes(buffer), " bytes, asked for ", bytes);
  profile::Scope timed("copy", "copyout", static_cast<int64_t>(bytes));
  runtime::Device& dev = runtime::get_device(buffer.arg_as<BufferArg>().device);
  dev.synchronize();
  dev.allocator().copyout(dst, buffer_address(buffer), bytes);
}

void copy_buffer(const UOp& dst, const UOp& src) {
  const size_t bytes = buffer_bytes(dst);
  if (bytes != buffer_bytes(src))
    throw_error("copy: the destination holds ", bytes, " bytes, the source ", buffer_bytes(src));
  runtime::Device& from = runtime::get_device(src.arg_as<BufferArg>().device);
  runtime::Device& to = runtime::get_device(dst.arg_as<BufferArg>().device);
  void* to_ptr = buffer_address(dst);
  const void* from_ptr = buffer_address(src);
  from.synchronize();  // the kernels writing the source have finished
  // Host memory is read and written in place, so one copy does when either side is host memory.
  if (from.allocator().host_memory()) {
    to.allocator().copyin(to_ptr, from_ptr, bytes);
  } else if (to.allocator().host_memory()) {
    to.synchronize();  // nothing queued still reads the destination's memory
    from.allocator().copyout(to_ptr, from_ptr, bytes);
  } else {
    std::vector<std::byte> staging(bytes);
    from.allocator().copyout(staging.data(), from_ptr, bytes);
    to.allocator().copyin(to_ptr, staging.data(), bytes);
  }
}

std::string default_device() { return runtime::default_device(); }

std::string canonical_device(const std::string& device) { return runtime::get_device(device).name(); }

UOpRef new_buffer(DType dtype, int64_t size, const std::string& device) {
  // unknown devices fail here, eagerly
  return UOp::make(Ops::BUFFER, dtype, {}, BufferArg{schedule::next_buffer_id(), size, canonical_device(device)});
}

}  // namespace kiln::engine
