#include "schedule/indexing.h"

#include "kiln/error.h"
#include "kiln/ir/symbolic.h"

namespace kiln::schedule {

UOpRef true_const() { return UOp::const_(dtypes::bool_, 1); }
UOpRef index_const(int64_t v) { return UOp::const_(dtypes::index, static_cast<double>(v)); }
bool is_always_valid(const Access& a) { return a.valid == true_const(); }

UOpRef flat_index(const std::vector<UOpRef>& idx, const Shape& shape) {
  UOpRef flat = index_const(0);
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1) flat = flat + idx[k] * stride;
    stride *= shape[k];
  }
  return simplify(flat);
}

Access apply_movement_op(const UOp& mop, const Access& out, UOpRef* pad_valid) {
  const Shape& in_shape = mop.src[0]->shape_or_throw();
  Access in{std::vector<UOpRef>(in_shape.size()), out.valid};
  switch (mop.op) {
    case Ops::RESHAPE: {
      // Flatten the output index, then re-divide it by the input's strides; the simplifier folds
      // the divisions and modulos away whenever the reshape merely splits or merges axes.
      UOpRef flat = flat_index(out.idx, *mop.shape());
      int64_t stride = 1;
      for (size_t k = in_shape.size(); k-- > 0;) {
        in.idx[k] = in_shape[k] == 1 ? index_const(0) : simplify((flat / stride) % in_shape[k]);
        stride *= in_shape[k];
      }
      break;
    }
    case Ops::PERMUTE: {
      const Shape& perm = mop.arg_as<Shape>();
      for (size_t k = 0; k < perm.size(); k++) in.idx[perm[k]] = out.idx[k];
      break;
    }
    case Ops::EXPAND:
      // A broadcast axis reads element 0 whatever the output index: the range is dropped.
      for (size_t k = 0; k < in_shape.size(); k++)
        in.idx[k] = in_shape[k] == 1 ? index_const(0) : out.idx[k];
      break;
    case Ops::SHRINK: {
      const Pairs& bounds = mop.arg_as<Pairs>();
      for (size_t k = 0; k < in_shape.size(); k++) in.idx[k] = simplify(out.idx[k] + bounds[k].first);
      break;
    }
    case Ops::FLIP: {
      in.idx = out.idx;
      for (int64_t axis : mop.arg_as<Shape>())
        in.idx[axis] = simplify(index_const(in_shape[axis] - 1) - out.idx[axis]);
      break;
    }
    case Ops::PAD: {
      const Pairs& pads = mop.arg_as<Pairs>();
      UOpRef cond = true_const();
      for (size_t k = 0; k < in_shape.size(); k++) {
        const UOpRef& i = out.idx[k];
        auto [before, after] = pads[k];
        in.idx[k] = simplify(i - before);
        // before <= i  is  (before-1) < i ;  i < before + size
        if (before > 0) cond = cond & (index_const(before - 1) < i);
        if (after > 0) cond = cond & (i < before + in_shape[k]);
      }
      cond = simplify(cond);
      in.valid = simplify(out.valid & cond);
      if (pad_valid) *pad_valid = cond;
      break;
    }
    default: throw_error("apply_movement_op: ", op_name(mop.op), " is not a movement op");
  }
  return in;
}

}  // namespace kiln::schedule
