#include "kiln/ir/spec.h"

#include <unordered_set>

#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::spec {
namespace {

[[noreturn]] void reject(const char* stage, const UOp* u, const std::string& why) {
  throw_error("spec (", stage, "): ", op_name(u->op), " ", u->dtype.name(), " ", arg_to_string(u->arg), ": ", why);
}

bool is_index_int(const UOp* u) { return u->dtype == dtypes::index; }

}  // namespace

void verify_tensor_graph(const UOpRef& root) {
  static constexpr OpSet allowed = group::Elementwise | group::Movement |
                                   OpSet{Ops::BUFFER, Ops::CONST, Ops::REDUCE, Ops::CONTIGUOUS, Ops::DETACH,
                                         Ops::COPY, Ops::GATHER, Ops::SINK};
  for (const UOp* u : root->toposort()) {
    if (!allowed.has(u->op)) reject("tensor", u, "not a tensor-graph op");
    if (u->op != Ops::SINK && !u->shape()) reject("tensor", u, "has no shape");
    if (u->op == Ops::REDUCE && u->src.size() != 1) reject("tensor", u, "a tensor REDUCE has one source");
  }
}

void verify_kernel(const UOpRef& sink) {
  static constexpr OpSet allowed = group::Elementwise | OpSet{Ops::SINK, Ops::END, Ops::STORE, Ops::INDEX,
                                                              Ops::LOAD, Ops::PARAM, Ops::CONST, Ops::RANGE,
                                                              Ops::REDUCE, Ops::GROUP};
  if (sink->op != Ops::SINK) reject("kernel", sink.get(), "a kernel is a SINK");
  for (const UOp* u : sink->toposort()) {
    if (!allowed.has(u->op)) reject("kernel", u, "not allowed in a kernel AST");
    switch (u->op) {
      case Ops::RANGE:
        if (u->src.empty() || u->src[0]->op != Ops::CONST || !is_index_int(u)) reject("kernel", u, "RANGE needs a constant index-typed size");
        break;
      case Ops::GROUP:  // the stores of a multi-output kernel
        for (const UOpRef& s : u->src)
          if (s->op != Ops::STORE) reject("kernel", u, "a GROUP in a kernel holds STOREs");
        break;
      case Ops::INDEX:
        if (u->src.size() < 2 || u->src[0]->op != Ops::PARAM || !is_index_int(u->src[1].get()))
          reject("kernel", u, "INDEX is (PARAM, index[, gate])");
        if (u->src.size() == 3 && !u->src[2]->dtype.is_bool()) reject("kernel", u, "the gate must be bool");
        break;
      case Ops::LOAD:
      case Ops::STORE:
        if (u->src[0]->op != Ops::INDEX) reject("kernel", u, "memory is accessed through an INDEX");
        if (u->op == Ops::STORE && u->src[1]->dtype != u->src[0]->dtype.base()) reject("kernel", u, "stored value dtype differs from the buffer's");
        break;
      case Ops::REDUCE:
        for (size_t i = 1; i < u->src.size(); i++)
          if (u->src[i]->op != Ops::RANGE) reject("kernel", u, "a kernel REDUCE lists its RANGEs after the value");
        break;
      default: break;
    }
  }
}

void verify_linear(const std::vector<UOpRef>& linear) {
  static constexpr OpSet allowed = group::Elementwise | OpSet{Ops::SINK, Ops::END, Ops::STORE, Ops::INDEX,
                                                              Ops::LOAD, Ops::PARAM, Ops::CONST, Ops::RANGE,
                                                              Ops::BUFFER, Ops::AFTER, Ops::GROUP, Ops::NOOP,
                                                              Ops::VECTORIZE, Ops::GEP, Ops::DEFINE_LOCAL,
                                                              Ops::BARRIER};
  std::unordered_set<const UOp*> seen, open;
  for (const UOpRef& u : linear) {
    if (!allowed.has(u->op)) reject("linear", u.get(), "not allowed after linearization");
    for (const UOpRef& s : u->src)
      if (!seen.count(s.get())) reject("linear", u.get(), "a source comes after its user");
    if (u->op == Ops::RANGE) open.insert(u.get());
    if (u->op == Ops::DEFINE_LOCAL && (!u->dtype.ptr || !std::holds_alternative<BufferArg>(u->arg)))
      reject("linear", u.get(), "DEFINE_LOCAL is a pointer with a BufferArg (its id and element count)");
    if (u->op == Ops::BARRIER && u->dtype != dtypes::void_) reject("linear", u.get(), "a BARRIER has no value");
    if (u->op == Ops::END)
      for (size_t i = 1; i < u->src.size(); i++)
        if (!open.erase(u->src[i].get())) reject("linear", u.get(), "closes a loop that is not open");
    seen.insert(u.get());
  }
  if (!open.empty()) throw_error("spec (linear): ", open.size(), " loop(s) never closed");
}

}  // namespace kiln::spec
