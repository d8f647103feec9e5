#pragma once
// The structure of a realize() graph, read in one walk without building anything: the dispatch
// cache's key. Graphs that differ only in their input buffers read the same.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln::engine {

// Positions of the nodes a walk has reached, by address: open addressing, reused from walk to walk
// (each walk bumps the stamp, which empties the table without touching it).
class PositionTable {
 public:
  void clear() {
    if (slots_.empty()) slots_.resize(256);  // a power of two; grows with the largest graph walked
    if (++stamp_ == 0) {  // wrapped: old stamps would look current
      std::fill(slots_.begin(), slots_.end(), Slot{});
      stamp_ = 1;
    }
    size_ = 0;
  }
  // The position stored for `u`, or kMissing.
  uint32_t find(const UOp* u) const {
    for (size_t i = index(u);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.stamp != stamp_) return kMissing;
      if (s.key == u) return s.position;
    }
  }
  void insert(const UOp* u, uint32_t position) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = index(u);
    while (slots_[i].stamp == stamp_) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = {u, position, stamp_};
    size_++;
  }
  static constexpr uint32_t kMissing = UINT32_MAX;

 private:
  struct Slot {
    const UOp* key = nullptr;
    uint32_t position = 0;
    uint32_t stamp = 0;
  };
  // Fibonacci hashing of the address (nodes are 16-byte aligned: the low bits say nothing)
  size_t index(const UOp* u) const {
    return (reinterpret_cast<uintptr_t>(u) >> 4) * 0x9e3779b97f4a7c15ULL >> 20 & (slots_.size() - 1);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const uint32_t old_stamp = stamp_;
    slots_.assign(old.size() * 2, {});
    stamp_ = 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.stamp == old_stamp) insert(s.key, s.position);
  }
  std::vector<Slot> slots_;
  uint32_t stamp_ = 0;
  size_t size_ = 0;
};

struct GraphWalk {
  static constexpr uint32_t kNotInput = UINT32_MAX;
  struct Node {
    const UOp* uop;
    uint32_t input;  // its input number if it is a BUFFER, else kNotInput
  };
  // The nodes in post-order (sources first, each once), and input BUFFERs numbered by first appearance.
  std::vector<Node> nodes;
  std::vector<uint32_t> edges;  // the sources of every node as positions, in order: each node has uop->src.size()
  std::vector<uint32_t> roots;  // the position of each root
  std::vector<const UOp*> inputs;
  size_t hash = 0;              // of the structure: equal for graphs that differ only in their inputs

  // Forgets the last walk (keeping the memory) and walks `roots`.
  void read(const std::vector<UOpRef>& roots);

 private:
  PositionTable seen_;
  std::vector<std::pair<const UOp*, uint32_t>> stack_;  // a node and its next source
};

}  // namespace kiln::engine
