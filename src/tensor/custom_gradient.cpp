// The registry of custom gradients, keyed by graph node. Nodes are hash-consed, so an identical
// graph built again finds the same entry; an entry is dropped when its node is freed, before the
// address can be reused.
#include "tensor/custom_gradient.h"

#include <mutex>
#include <unordered_map>

namespace kiln::autograd {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<const UOp*, CustomGradient> entries;

  static Registry& get() {
    static Registry* r = [] {
      auto* reg = new Registry;  // never destroyed: nodes may be freed during static destruction
      // The ops a composite's output may end in: a reduction, or the reshape or permute (a
      // channels-last result read as NCHW) after it. (Every free of such a node runs this hook,
      // so the list stays short.)
      for (Ops op : {Ops::REDUCE, Ops::RESHAPE, Ops::PERMUTE})
        on_uop_release(op, [reg](const UOp& u) {
          std::lock_guard lock(reg->mu);
          reg->entries.erase(&u);
        });
      return reg;
    }();
    return *r;
  }
};

}  // namespace

Tensor set_custom_gradient(const Tensor& out, std::vector<Tensor> inputs, CustomBackward backward) {
  const Ops op = out.uop()->op;
  const Tensor result = op == Ops::REDUCE || op == Ops::RESHAPE || op == Ops::PERMUTE
                            ? out
                            : Tensor(UOp::make(Ops::RESHAPE, out.dtype(), {out.uop()}, out.shape()));
  const UOp* node = result.uop().get();
  CustomGradient entry{{}, std::move(backward)};
  for (const Tensor& t : inputs) entry.inputs.push_back(t.uop());
  Registry& r = Registry::get();
  std::lock_guard lock(r.mu);
  r.entries[node] = std::move(entry);
  return result;
}

std::optional<CustomGradient> custom_gradient(const UOp* node) {
  Registry& r = Registry::get();
  std::lock_guard lock(r.mu);
  auto it = r.entries.find(node);
  if (it == r.entries.end()) return std::nullopt;
  return it->second;
}

}  // namespace kiln::autograd
