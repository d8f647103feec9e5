#pragma once
// Views as index arithmetic: how a movement op maps the indices its consumer reads (one index
// expression per output axis, plus a validity condition) to the indices of its source.
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln::schedule {

// How a node is read: one index expression per axis of its shape, valid where `valid` is true.
struct Access {
  std::vector<UOpRef> idx;
  UOpRef valid;  // bool; the CONST true when always valid
  bool operator==(const Access& o) const { return idx == o.idx && valid == o.valid; }
};

UOpRef true_const();
UOpRef index_const(int64_t v);
bool is_always_valid(const Access& a);

// The access of `mop`'s source given the access of `mop` (simplified). For PAD, `pad_valid`
// receives the condition under which the source is read (else the value is 0).
Access apply_movement_op(const UOp& mop, const Access& out, UOpRef* pad_valid = nullptr);

// Row-major linear index of `idx` into a buffer of `shape`.
UOpRef flat_index(const std::vector<UOpRef>& idx, const Shape& shape);

}  // namespace kiln::schedule
