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
// `versions` maps nodes to nodes under `sink`: those become their rewritten versions too.
UOpRef split_reduces(const UOpRef& sink, std::unordered_map<const UOp*, UOpRef>& versions);

// What the scheduler knows of a device: every choice it makes by machine reads this, so the tensor
// graph above it is the same on every device.
struct Target {
  // Whether the device runs each kernel's output loops in order within one thread (it has no
  // work-groups, as the CPU): a row's reduction broadcast back along its row is then computed once
  // per row inside its consumer's kernel (a softmax is one kernel). On other devices each work-item
  // would recompute it, so it is stored.
  bool loops_in_order = true;
  int vector_bytes = 0;       // widest SIMD register; 0: none (GPUs), kernels are scalar per work-item
  int vector_registers = 16;  // how many registers of vector_bytes (codegen sizes register tiles to them)
  int matmul_tile_rows = 0;   // the most rows codegen's register tile gives a matmul (0: no register tiles)
};
// The engine answers from the runtime's devices; the answer for a device name never changes.
using TargetOf = std::function<Target(const std::string& device)>;

// Rewrites each matmul-shaped sum (matmul_tiles.cpp) for the register tiles of the device it runs on:
// operands copied zero-padded to whole tiles, a large right operand copied into column panels.
// `versions` maps nodes to nodes under `sink`: those become their rewritten versions too.
UOpRef tile_matmuls(const UOpRef& sink, const TargetOf& target_of, const std::string& device_of_constants,
                    std::unordered_map<const UOp*, UOpRef>& versions);

// Convolution output rows narrower than this fill no SIMD vector in the NCHW layout: the tensor layer
// runs such convs over channels-last copies on every device (tensor/pooling.cpp).
constexpr int64_t kConvMinRowForChannelsFirst = 16;
// Rewrites each channels-last convolution (conv_layout.cpp) whose output rows would fill vectors in
// the NCHW layout back into that layout where its device's Target prefers it (no SIMD vectors, or 32
// vector registers). `versions` maps nodes to nodes under `sink`: those become their rewritten versions too.
UOpRef lay_out_convs(const UOpRef& sink, const TargetOf& target_of, const std::string& device_of_constants,
                     std::unordered_map<const UOp*, UOpRef>& versions);

// The end of a rewrite pass over `sink` whose graph_rewrite_map answer is `rewritten`: moves `versions`
// to their rewritten nodes and returns the rewritten sink. When the pass `replaced` nodes, versions
// that left the graph with them (nodes inside what was replaced) are dropped.
UOpRef follow_rewrite(const UOpRef& sink, const std::unordered_map<const UOp*, UOpRef>& rewritten, bool replaced,
                      std::unordered_map<const UOp*, UOpRef>& versions);

// Schedules everything needed to realize `roots` (tensor-graph nodes), reusing the schedule of an
// earlier graph of the same structure over other input buffers (schedule_cache.cpp; SCHEDULE_CACHE=0
// turns the cache off). Results that read no buffer (constants, arange) go to `device`.
Schedule create_schedule(const std::vector<UOpRef>& roots, const std::string& device, const TargetOf& target_of);
// The scheduler itself, without the cache (kernelize.cpp).
Schedule build_schedule(const std::vector<UOpRef>& roots, const std::string& device, const TargetOf& target_of);
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
