// C renderer: one line of C per linearized UOp, with single-use arithmetic inlined into its user.
// float16/bfloat16 live in memory as 16-bit patterns and in registers as float (each result is
// rounded back to 16 bits), so the generated C needs neither compiler's half-precision support.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <unordered_map>

#include "kiln/error.h"
#include "renderer/renderer.h"

namespace kiln::renderer {
namespace {

constexpr int kMaxInlineDepth = 16;

bool is_half(DType d) { return d.scalar == ScalarType::Float16 || d.scalar == ScalarType::BFloat16; }
std::string half_suffix(DType d) { return d.scalar == ScalarType::Float16 ? "half" : "bf16"; }

// The C type a value of `d` has in a register; vectors are the compilers' vector types
// (vector_type below), e.g. float_x16.
std::string vector_name(DType d) {
  std::string s = d.c_name();
  std::replace(s.begin(), s.end(), ' ', '_');
  return s + "_x" + std::to_string(d.count);
}
std::string reg_type(DType d) { return d.count > 1 ? vector_name(d) : is_half(d) ? "float" : d.c_name(); }
// aligned(elements): vector loads and stores may start at any element.
std::string vector_typedef(DType d) {
  return "typedef " + d.c_name() + " " + vector_name(d) + " __attribute__((vector_size(" +
         std::to_string(d.itemsize() * d.count) + "), aligned(" + std::to_string(d.itemsize()) + ")));\n";
}
// Every lane of a vector of `d` set to `x`.
std::string splat(DType d, const std::string& x) {
  std::string s = "(" + vector_name(d) + "){" + x;
  for (int i = 1; i < d.count; i++) s += ", " + x;
  return s + "}";
}
// The C type of `d` in memory.
std::string mem_type(DType d) { return is_half(d) ? "unsigned short" : d.c_name(); }

// The integer vector a comparison of `d` vectors gives (lanes of the same width): max selects
// with it bitwise, as C has no ?: on vectors.
DType mask_type(DType d) { return DType(d.itemsize() == 8 ? ScalarType::Int64 : ScalarType::Int32, d.count); }

const char* kPreamble = R"(#define KILN_MAX(a, b) ({ __typeof__(a) a_ = (a), b_ = (b); (a_ > b_ || a_ != a_) ? a_ : b_; })
#define KILN_VMAX(a, b, mask) ({ __typeof__(a) a_ = (a), b_ = (b); mask m_ = (mask)((a_ > b_) | (a_ != a_)); \
  (__typeof__(a))(((mask)a_ & m_) | ((mask)b_ & ~m_)); })
#define KILN_BITCAST(to, from, x) ({ union { from f; to t; } u_; u_.f = (x); u_.t; })
)";

const char* kHalfPreamble = R"(static inline float kiln_half_to_float(unsigned short h) {
  unsigned int sign = (unsigned int)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
  else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0) bits = sign;
  else { exp = 113; while (!(man & 0x400)) { man <<= 1; exp--; } bits = sign | (exp << 23) | ((man & 0x3ff) << 13); }
  return KILN_BITCAST(float, unsigned int, bits);
}
static inline unsigned short kiln_float_to_half(float f) {
  unsigned int x = KILN_BITCAST(unsigned int, float, f), sign = (x >> 16) & 0x8000, absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return (unsigned short)(sign | 0x7e00);           /* NaN */
  if (absx >= 0x477ff000u) return (unsigned short)(sign | 0x7c00);          /* overflow: inf */
  if (absx < 0x33000001u) return (unsigned short)sign;                       /* underflow: 0 */
  int e = (int)(absx >> 23) - 127;
  unsigned int man = (absx & 0x7fffff) | 0x800000;
  int shift = e < -14 ? -1 - e : 13;                                          /* subnormal or normal */
  unsigned int half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
  if (rest > mid || (rest == mid && (half & 1))) half++;                     /* round to nearest even */
  if (e < -14) return (unsigned short)(sign | half);
  return (unsigned short)(sign | ((unsigned int)(e + 15) << 10) + (half - 0x400));
}
static inline float kiln_bf16_to_float(unsigned short h) { return KILN_BITCAST(float, unsigned int, (unsigned int)h << 16); }
static inline unsigned short kiln_float_to_bf16(float f) {
  unsigned int x = KILN_BITCAST(unsigned int, float, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40);  /* quiet NaN */
  return (unsigned short)((x + 0x7fff + ((x >> 16) & 1)) >> 16);                  /* round to nearest even */
}
)";

// An integer CONST exactly as stored (doubles lose integers above 2^53).
std::string int_literal(int64_t v, DType d) {
  if (d.scalar == ScalarType::UInt64) return std::to_string(static_cast<uint64_t>(v)) + "ull";
  if (d.scalar == ScalarType::Int32 && v > INT32_MIN) return std::to_string(v);
  std::string digits = v == INT64_MIN ? "(-9223372036854775807ll-1)" : std::to_string(v) + "ll";
  return "((" + d.c_name() + ")" + digits + ")";
}

std::string literal(double v, DType d) {
  if (d.is_bool()) return v != 0 ? "1" : "0";
  char buf[64];
  if (d.is_float()) {
    bool is_double = d.scalar == ScalarType::Float64;
    if (std::isnan(v)) return is_double ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")";
    if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (is_double ? "__builtin_inf()" : "__builtin_inff()");
    std::snprintf(buf, sizeof buf, is_double ? "%.17g" : "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return is_double ? s : s + "f";
  }
  return int_literal(static_cast<int64_t>(v), d);
}

// A CONST as C; negative numbers in parentheses, so "x - -1" never becomes "x--1".
std::string const_literal(const UOp& c) {
  const int64_t* i = std::get_if<int64_t>(&c.arg);
  std::string text = !i ? literal(c.const_value(), c.dtype) : c.dtype.is_bool() ? (*i ? "1" : "0") : int_literal(*i, c.dtype);
  return text[0] == '-' ? "(" + text + ")" : text;
}

class CRenderer final : public Renderer {
 public:
  std::string language() const override { return "C"; }

  std::string render(const Kernel& k) const override {
    std::unordered_map<const UOp*, int> uses;
    bool halves = false;
    std::set<std::string> vector_types;
    for (const UOpRef& u : k.linear) {
      for (const UOpRef& s : u->src) uses[s.get()]++;
      halves |= is_half(u->dtype);
      if (u->dtype.count > 1) vector_types.insert(vector_typedef(DType(u->dtype.scalar, u->dtype.count)));
      if (u->op == Ops::MAX && u->dtype.count > 1) vector_types.insert(vector_typedef(mask_type(u->dtype)));
    }
    std::unordered_map<const UOp*, std::string> name;  // the C expression or variable for each node
    std::unordered_map<const UOp*, int> nesting;       // how deep each inlined expression is
    std::ostringstream head, body;
    head << kPreamble << (halves ? kHalfPreamble : "");
    for (const std::string& t : vector_types) head << t;
    head << "void " << k.name << "(void** restrict bufs, const long long* restrict vals, int core_id) {\n";
    int depth = 1, counter = 0;
    auto line = [&](const std::string& text) { body << std::string(2 * depth, ' ') << text << "\n"; };
    auto var = [&](const UOp* u, const std::string& prefix, const std::string& expr) {
      std::string v = prefix + std::to_string(counter++);
      line(reg_type(u->dtype) + " " + v + " = " + expr + ";");
      name[u] = v;
    };
    auto src = [&](const UOp* u, size_t i) -> const std::string& { return name.at(u->src[i].get()); };

    for (const UOpRef& ref : k.linear) {
      const UOp* u = ref.get();
      switch (u->op) {
        case Ops::SINK: case Ops::GROUP: case Ops::NOOP: break;
        case Ops::PARAM: {
          std::string v = "data" + std::to_string(u->arg_as<int64_t>());
          head << "  " << mem_type(u->dtype) << "* restrict " << v << " = (" << mem_type(u->dtype) << "*)bufs["
               << u->arg_as<int64_t>() << "];\n";
          name[u] = v;
          break;
        }
        case Ops::CONST:
          name[u] = u->dtype.count > 1 ? splat(u->dtype, const_literal(*u)) : const_literal(*u);
          break;
        case Ops::BUFFER: {  // a register accumulator
          std::string v = "acc" + std::to_string(u->arg_as<BufferArg>().id);
          line(reg_type(DType(u->dtype.scalar, u->dtype.count)) + " " + v + ";");
          name[u] = v;
          break;
        }
        case Ops::AFTER: name[u] = src(u, 0); break;
        case Ops::RANGE: {
          std::string v = "ridx" + std::to_string(u->arg_as<RangeArg>().id);
          const std::string& n = src(u, 0);
          if (u->arg_as<RangeArg>().type == AxisType::THREAD && k.threads > 1) {
            // this core's share [lo, hi) of the loop
            std::string t = std::to_string(k.threads);
            line("const int " + v + "_lo = (int)((long long)core_id * " + n + " / " + t + "), " + v +
                 "_hi = (int)((long long)(core_id + 1) * " + n + " / " + t + ");");
            line("for (int " + v + " = " + v + "_lo; " + v + " < " + v + "_hi; " + v + "++) {");
          } else {
            line("for (int " + v + " = 0; " + v + " < " + n + "; " + v + "++) {");
          }
          depth++;
          name[u] = v;
          break;
        }
        case Ops::END:
          for (size_t i = 1; i < u->src.size(); i++) {
            depth--;
            line("}");
          }
          break;
        case Ops::INDEX:
          // register accumulators are plain variables; global memory is pointer + offset
          if (u->src[0]->op == Ops::PARAM) name[u] = "(" + src(u, 0) + "+" + src(u, 1) + ")";
          else name[u] = src(u, 0);
          break;
        case Ops::LOAD: {
          const UOp* idx = u->src[0].get();
          if (u->dtype.count > 1 && idx->src[0]->op == Ops::PARAM) {
            // a vector of neighbours; a gated one branches, as the lanes past the gate may be
            // past the buffer's end
            std::string value = "(*(" + reg_type(u->dtype) + "*)" + name.at(idx) + ")";
            if (idx->src.size() > 2)
              value = "(" + name.at(idx->src[2].get()) + " ? " + value + " : " + splat(u->dtype, literal(0, u->dtype)) + ")";
            var(u, "val", value);
            break;
          }
          std::string value = idx->src[0]->op == Ops::PARAM ? "(*" + name.at(idx) + ")" : name.at(idx);
          if (idx->src[0]->op == Ops::PARAM && is_half(u->dtype)) value = "kiln_" + half_suffix(u->dtype) + "_to_float" + value;
          if (idx->src.size() > 2 && idx->src[0]->op == Ops::PARAM) {
            // A gated load reads element 0 where invalid and selects 0 after: no branch in the
            // loop, and the select vectorizes.
            const std::string& gate = name.at(idx->src[2].get());
            std::string raw = "(*(" + src(idx, 0) + "+(" + gate + " ? " + src(idx, 1) + " : 0)))";
            if (is_half(u->dtype)) raw = "kiln_" + half_suffix(u->dtype) + "_to_float" + raw;
            var(u, "val", raw);
            value = "(" + gate + " ? " + name.at(u) + " : " + literal(0, u->dtype) + ")";
          } else if (idx->src.size() > 2) {
            value = "(" + name.at(idx->src[2].get()) + " ? " + value + " : " + literal(0, u->dtype) + ")";
          }
          var(u, "val", value);
          break;
        }
        case Ops::STORE: {
          const UOp* idx = u->src[0].get();
          std::string value = src(u, 1);
          if (idx->src[0]->op == Ops::PARAM && u->src[1]->dtype.count > 1) {
            line("*(" + reg_type(u->src[1]->dtype) + "*)" + name.at(idx) + " = " + value + ";");
          } else if (idx->src[0]->op == Ops::PARAM) {
            if (is_half(u->src[1]->dtype)) value = "kiln_float_to_" + half_suffix(u->src[1]->dtype) + "(" + value + ")";
            line("*" + name.at(idx) + " = " + value + ";");
          } else {
            line(name.at(idx) + " = " + value + ";");
          }
          break;
        }
        default: {
          std::string expr = alu(u, name);
          // Inline single-use results, but not without limit: a deep chain would become one
          // expression too deeply nested for the C compiler.
          int d = 1;
          for (const UOpRef& src : u->src) d = std::max(d, 1 + nesting[src.get()]);
          if (uses[u] == 1 && d <= kMaxInlineDepth) {
            name[u] = expr;
            nesting[u] = d;
          } else {
            var(u, "alu", expr);
          }
        }
      }
    }
    head << body.str() << "}\n";
    return head.str();
  }

 private:
  static std::string alu(const UOp* u, const std::unordered_map<const UOp*, std::string>& name) {
    auto s = [&](size_t i) -> const std::string& { return name.at(u->src[i].get()); };
    DType in = u->src.empty() ? u->dtype : u->src[0]->dtype;
    bool dbl = in.scalar == ScalarType::Float64;
    auto math = [&](const char* f) { return std::string("__builtin_") + f + (dbl ? "" : "f") + "(" + s(0) + ")"; };
    auto bin = [&](const char* op) { return "(" + s(0) + op + s(1) + ")"; };
    std::string e;
    switch (u->op) {
      case Ops::EXP: e = math("exp"); break;
      case Ops::EXP2: e = math("exp2"); break;
      case Ops::LOG: e = math("log"); break;
      case Ops::LOG2: e = math("log2"); break;
      case Ops::SIN: e = math("sin"); break;
      case Ops::COS: e = math("cos"); break;
      case Ops::SQRT: e = math("sqrt"); break;
      case Ops::TRUNC: e = math("trunc"); break;
      case Ops::RECIPROCAL: e = "(" + literal(1, u->dtype) + "/" + s(0) + ")"; break;
      case Ops::NEG: e = "(-" + s(0) + ")"; break;
      case Ops::ADD: e = bin("+"); break;
      case Ops::SUB: e = bin("-"); break;
      case Ops::MUL: e = bin("*"); break;
      case Ops::FDIV: case Ops::IDIV: e = bin("/"); break;
      case Ops::MOD: e = bin("%"); break;
      case Ops::CMPLT: e = bin("<"); break;
      case Ops::CMPNE: e = bin("!="); break;
      case Ops::CMPEQ: e = bin("=="); break;
      case Ops::AND: e = bin("&"); break;
      case Ops::OR: e = bin("|"); break;
      case Ops::XOR: e = bin("^"); break;
      case Ops::SHL: e = bin("<<"); break;
      case Ops::SHR: e = bin(">>"); break;
      case Ops::MAX:
        // parenthesized: a vector literal's commas would split the macro's arguments
        if (u->dtype.count > 1) e = "KILN_VMAX((" + s(0) + "), (" + s(1) + "), " + vector_name(mask_type(u->dtype)) + ")";
        else e = "KILN_MAX(" + s(0) + ", " + s(1) + ")";
        break;
      case Ops::WHERE: e = "(" + s(0) + " ? " + s(1) + " : " + s(2) + ")"; break;
      case Ops::GEP: return s(0) + "[" + std::to_string(u->arg_as<int64_t>()) + "]";
      case Ops::VECTORIZE: {
        e = "(" + reg_type(u->dtype) + "){";
        for (size_t i = 0; i < u->src.size(); i++) e += (i ? ", " : "") + s(i);
        return e + "}";
      }
      case Ops::CAST:
        e = "((" + reg_type(u->dtype) + ")" + s(0) + ")";
        break;
      case Ops::BITCAST: {
        std::string x = s(0);
        if (is_half(in)) x = "kiln_float_to_" + half_suffix(in) + "(" + x + ")";
        e = "KILN_BITCAST(" + mem_type(u->dtype) + ", " + mem_type(in) + ", " + x + ")";
        if (is_half(u->dtype)) return "kiln_" + half_suffix(u->dtype) + "_to_float(" + e + ")";
        return e;
      }
      default: throw_error("C renderer: cannot render ", op_name(u->op));
    }
    // C computes 8- and 16-bit integers as int: wrap each result to its type, as storing it would.
    if (u->dtype.is_int() && u->dtype.itemsize() < 4 && u->dtype.count == 1) return "((" + u->dtype.c_name() + ")" + e + ")";
    // 16-bit floats compute in float; round each result back to 16 bits.
    if (is_half(u->dtype) && u->op != Ops::WHERE)
      e = "kiln_" + half_suffix(u->dtype) + "_to_float(kiln_float_to_" + half_suffix(u->dtype) + "(" + e + "))";
    return e;
  }
};

}  // namespace

const Renderer& c_renderer() {
  static const CRenderer r;
  return r;
}

}  // namespace kiln::renderer
