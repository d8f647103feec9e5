#pragma once
// The scheduler: cuts a tensor graph into kernels. Which nodes become buffers (realize), which
// fuse into their consumers (range propagation), and the kernel ASTs that compute them.
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/uop.h"
#include "kiln/schedule_item.h"

namespace kiln::schedule {

struct Schedule {
  // LINEAR(CALL(kernel SINK, BUFFER...)...): the kernels to run, in order. Buffer 0 of each call is
  // its output; the BUFFERs are not allocated yet. A copy between devices is CALL(copy_ast(),
  // destination BUFFER, source BUFFER).
  UOpRef linear;
  // What each realized tensor-graph node becomes once the schedule has run: a view of its buffer.
  std::unordered_map<const UOp*, UOpRef> becomes;
  std::vector<UOpRef> keep_alive;  // keys of `becomes`
};

// A node that is a contiguous view of a realized buffer (RESHAPE/CONTIGUOUS over a BUFFER): it
// needs no kernel.
bool is_buffer_view(const UOp* u);
// The buffer view without its no-op CONTIGUOUSes: RESHAPEs over the BUFFER.
UOpRef strip_contiguous(const UOpRef& u);

// Rewrites each reduction of many elements into few outputs as two: partial sums, then their sum.
UOpRef split_reduces(const UOpRef& sink);

// Whether a device runs each kernel's output loops in order within one thread (it has no
// work-groups, as the CPU): a row's reduction broadcast back along its row is then computed once
// per row inside its consumer's kernel (a softmax is one kernel). On other devices each work-item
// would recompute it, so it is stored. The engine answers from the runtime's devices; the answer
// for a device name never changes.
using LoopsInOrder = std::function<bool(const std::string& device)>;

// Schedules everything needed to realize `roots` (tensor-graph nodes), reusing the schedule of an
// earlier graph of the same structure over other input buffers (schedule_cache.cpp; SCHEDULE_CACHE=0
// turns the cache off). Results that read no buffer (constants, arange) go to `device`.
Schedule create_schedule(const std::vector<UOpRef>& roots, const std::string& device, const LoopsInOrder& loops_in_order);
// The scheduler itself, without the cache (kernelize.cpp).
Schedule build_schedule(const std::vector<UOpRef>& roots, const std::string& device, const LoopsInOrder& loops_in_order);
// How many create_schedule calls the cache answered.
int64_t schedule_cache_hits();

// What a copy step's CALL holds in place of a kernel.
UOpRef copy_ast();
// A copy step as DEBUG=2 and schedule() name it, e.g. "copy 4096, CL <- CPU" (bytes, devices).
std::string copy_name(const UOp& dst, const UOp& src);

// The ScheduleItem view of each CALL in a LINEAR.
std::vector<ScheduleItem> schedule_items(const UOpRef& linear);

// Allocates a fresh BUFFER UOp id.
int64_t next_buffer_id();

}  // namespace kiln::schedule
