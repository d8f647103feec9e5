#pragma once
// Ops: one enum for every stage (tensor graph, kernel AST, linear program). Names follow tinygrad's.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace kiln {

#define KILN_OPS(X)                                                                   \
  /* defines */ X(PARAM) X(BUFFER) X(CONST) X(RANGE) X(SPECIAL) X(DEFINE_LOCAL)          \
  /* structure */ X(SINK) X(GROUP) X(END) X(AFTER) X(NOOP) X(BARRIER)                   \
  /* schedule */ X(CALL) X(LINEAR)                                                       \
  /* memory */ X(INDEX) X(LOAD) X(STORE) X(COPY)                                       \
  /* vectors */ X(VECTORIZE) X(GEP)                                                        \
  /* movement */ X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(SHRINK) X(FLIP)             \
  /* tensor-graph hints */ X(CONTIGUOUS) X(DETACH)                                      \
  /* tensor-graph indexed read: GATHER(src, index), arg = axis */ X(GATHER)             \
  /* reduce */ X(REDUCE)                                                                \
  /* unary */ X(CAST) X(BITCAST) X(EXP) X(EXP2) X(LOG) X(LOG2) X(SIN) X(COS) X(SQRT)       \
  X(RECIPROCAL) X(NEG) X(TRUNC)                                                         \
  /* binary */ X(ADD) X(MUL) X(SUB) X(FDIV) X(IDIV) X(MOD) X(MAX) X(CMPLT) X(CMPNE) X(CMPEQ) \
  X(AND) X(OR) X(XOR) X(SHL) X(SHR)                                                     \
  /* ternary */ X(WHERE)

enum class Ops : uint8_t {
#define KILN_X(n) n,
  KILN_OPS(KILN_X)
#undef KILN_X
};

inline constexpr int kNumOps = 0
#define KILN_X(n) +1
    KILN_OPS(KILN_X)
#undef KILN_X
    ;

std::string_view op_name(Ops op);

// A set of Ops as a bitmask; used by patterns and op groups.
class OpSet {
 public:
  constexpr OpSet() = default;
  constexpr OpSet(std::initializer_list<Ops> ops) {
    for (Ops o : ops) add(o);
  }
  constexpr OpSet(Ops o) { add(o); }
  constexpr bool has(Ops o) const { return (w_[idx(o) / 64] >> (idx(o) % 64)) & 1u; }
  constexpr bool empty() const { return w_[0] == 0 && w_[1] == 0; }
  constexpr OpSet operator|(OpSet o) const {
    OpSet r = *this;
    r.w_[0] |= o.w_[0];
    r.w_[1] |= o.w_[1];
    return r;
  }
  template <class F>
  void for_each(F&& f) const {
    for (int i = 0; i < kNumOps; i++)
      if (has(static_cast<Ops>(i))) f(static_cast<Ops>(i));
  }

 private:
  static constexpr int idx(Ops o) { return static_cast<int>(o); }
  constexpr void add(Ops o) { w_[idx(o) / 64] |= uint64_t{1} << (idx(o) % 64); }
  std::array<uint64_t, 2> w_{};
};

namespace group {
inline constexpr OpSet Unary{Ops::EXP, Ops::EXP2, Ops::LOG,        Ops::LOG2, Ops::SIN,
                             Ops::COS, Ops::SQRT, Ops::RECIPROCAL, Ops::NEG,  Ops::TRUNC};
inline constexpr OpSet Binary{Ops::ADD,   Ops::MUL,   Ops::SUB,   Ops::FDIV, Ops::IDIV, Ops::MOD,
                              Ops::MAX,   Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR,
                              Ops::XOR,   Ops::SHL,   Ops::SHR};
inline constexpr OpSet Ternary{Ops::WHERE};
inline constexpr OpSet ALU = Unary | Binary | Ternary;
// ALU plus the dtype conversions: everything computed lane by lane.
inline constexpr OpSet Elementwise = ALU | OpSet{Ops::CAST, Ops::BITCAST};
inline constexpr OpSet Movement{Ops::RESHAPE, Ops::PERMUTE, Ops::EXPAND, Ops::PAD, Ops::SHRINK, Ops::FLIP};
inline constexpr OpSet Comparison{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
inline constexpr OpSet Commutative{Ops::ADD, Ops::MUL, Ops::MAX, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR, Ops::XOR};
inline constexpr OpSet Associative{Ops::ADD, Ops::MUL, Ops::AND, Ops::OR, Ops::MAX};
}  // namespace group

}  // namespace kiln
