#pragma once
// realize()'s fast path. An eager loop or a training step realizes graphs of one structure over new
// buffers again and again. The first realize of a structure records its prepared launches (kernels
// compiled, buffers numbered as slots: the graph's inputs, then the buffers its schedule makes),
// the memory plan and what each realized node becomes. A later realize of that structure walks its
// graph once, binds its inputs, makes its output buffers and launches: no scheduling, no rewrite,
// no kernel lookup. The cache stands aside while DEBUG, VIZ, PROFILE or a JIT capture want the full
// path, and SCHEDULE_CACHE=0 turns it off with the schedule cache; any setting a ScopedEnv changes
// retires every plan.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/uop.h"
#include "schedule/schedule.h"

namespace kiln::engine {

struct DispatchPlan;
struct DispatchScratch;

// One realize() through the cache.
class Dispatch {
 public:
  // Looks the graph of `roots` up; nullopt when the fast path stands aside (see the file comment).
  static std::optional<Dispatch> lookup(const std::vector<UOpRef>& roots);

  // Whether a plan matched: then becomes() and run() apply; else the full path runs, then record().
  bool hit() const { return plan_ != nullptr; }
  // What each realized node becomes: views of the buffers bound to this realize.
  const std::unordered_map<const UOp*, UOpRef>& becomes() const;
  // Whether some realized node is not a root. The roots are in use (their tensors are being
  // realized); only those others need the live tensors searched (TensorRegistry::in_use).
  bool realizes_beyond_roots() const;
  // Launches the plan. The roots and the realized nodes in `needed` keep their buffers; the other
  // buffers the plan writes are reused after their last reader (as run_schedule does).
  void run(const std::unordered_set<const UOp*>& needed) const;
  // Records the schedule the full path ran for this graph (after run_schedule: its kernels are
  // compiled). Graphs whose schedule refers to nodes or buffers outside the graph are not recorded.
  void record(const schedule::Schedule& s) const;

 private:
  // The walk and what a hit fills go back to a pool, emptied, when the dispatch ends: their
  // containers keep their memory, so a hit allocates little.
  struct ReturnScratch {
    void operator()(DispatchScratch* s) const;
  };

  Dispatch(const std::vector<UOpRef>& roots, std::string device, uint64_t generation);
  void bind(std::shared_ptr<const DispatchPlan> plan);

  std::unique_ptr<DispatchScratch, ReturnScratch> scratch_;
  std::string device_;  // the default device the graph's constants go to
  uint64_t generation_;  // of the settings
  std::shared_ptr<const DispatchPlan> plan_;
};

// How many realizes the dispatch cache answered since the process started.
int64_t dispatch_cache_hits();

}  // namespace kiln::engine
