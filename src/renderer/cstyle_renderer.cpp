// The C-style renderer: one line per linearized UOp, with single-use arithmetic inlined into its
// user. float16/bfloat16 live in memory as 16-bit patterns and in registers as float (each result is
// rounded back to 16 bits), so the generated code needs no half-precision support from the compiler
// (neither C compilers' nor OpenCL's cl_khr_fp16).
#include "renderer/cstyle_renderer.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "uop/fp8_codec.h"

namespace kiln::renderer {
namespace {

// The integer vector a comparison of `d` vectors gives (lanes of the same width): KILN_VMAX
// selects with it.
DType mask_type(DType d) { return DType(d.itemsize() == 8 ? ScalarType::Int64 : ScalarType::Int32, d.count); }

constexpr int kMaxInlineDepth = 16;

bool is_half(DType d) { return d.scalar == ScalarType::Float16 || d.scalar == ScalarType::BFloat16; }
// 16- and 8-bit floats compute in float registers and are stored as their bit patterns, converted by
// kiln_<suffix>_to_float and kiln_float_to_<suffix>.
bool is_narrow(DType d) { return is_half(d) || d.is_fp8(); }
std::string narrow_suffix(DType d) {
  return d.is_fp8() ? fp8_format(d).suffix : d.scalar == ScalarType::Float16 ? "half" : "bf16";
}

// Needs only KILN_BITCAST from the language's preamble and C types every C-like language has. Where the
// C compiler targets F16C (x86 since Ivy Bridge), a half widens in one instruction instead of the branchy
// bit arithmetic, which dominated kernels that read float16 weights.
const char* kHalfPreamble = R"(static inline float kiln_half_to_float(unsigned short h) {
#if defined(__F16C__)
  typedef short kiln_v8hi __attribute__((vector_size(16)));
  return __builtin_ia32_vcvtph2ps((kiln_v8hi){(short)h, 0, 0, 0, 0, 0, 0, 0})[0];
#endif
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
  unsigned int bits = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
  if (rest > mid || (rest == mid && (bits & 1))) bits++;                     /* round to nearest even */
  if (e < -14) return (unsigned short)(sign | bits);
  return (unsigned short)(sign | ((unsigned int)(e + 15) << 10) + (bits - 0x400));
}
static inline float kiln_bf16_to_float(unsigned short h) { return KILN_BITCAST(float, unsigned int, (unsigned int)h << 16); }
static inline unsigned short kiln_float_to_bf16(float f) {
  unsigned int x = KILN_BITCAST(unsigned int, float, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40);  /* quiet NaN */
  return (unsigned short)((x + 0x7fff + ((x >> 16) & 1)) >> 16);                  /* round to nearest even */
}
)";

// The fp8 codec and one pair of conversions per fp8 format; like kHalfPreamble, plain C over KILN_BITCAST.
std::string fp8_preamble() {
  std::string s = kFp8CodecSource;
  for (DType d : {dtypes::fp8e4m3, dtypes::fp8e5m2, dtypes::fp8e4m3fnuz, dtypes::fp8e5m2fnuz}) {
    const Fp8Format& f = fp8_format(d);
    const std::string args =
        ", " + std::to_string(f.man) + ", " + std::to_string(f.bias) + ", " + std::to_string(f.kind) + ")";
    s += "static inline float kiln_" + std::string(f.suffix) + "_to_float(unsigned char b) { " +
         "return KILN_BITCAST(float, unsigned int, kiln_fp8_to_f32_bits(b" + args + "); }\n";
    s += "static inline unsigned char kiln_float_to_" + std::string(f.suffix) + "(float f) { " +
         "return kiln_fp8_from_f32_bits(KILN_BITCAST(unsigned int, float, f)" + args + "; }\n";
  }
  return s;
}


// The language's names for kiln's types.
struct TypeNames {
  const CStyleLanguage& lang;

  std::string scalar(DType d) const {
    auto it = lang.types.find(d.scalar);
    return it != lang.types.end() ? it->second : d.c_name();
  }
  // Vectors are the compilers' vector types (vector_typedef below), e.g. float_x16. Bool vectors
  // are comparison masks: int32 lanes, all ones for true (what comparing float32 vectors gives).
  static DType lanes(DType d) { return d.is_bool() ? DType(ScalarType::Int32, d.count) : d; }
  std::string vector(DType d) const {
    d = lanes(d);
    std::string s = scalar(d);
    std::replace(s.begin(), s.end(), ' ', '_');
    return s + "_x" + std::to_string(d.count);
  }
  // The type a value of `d` has in a register.
  std::string reg(DType d) const { return d.count > 1 ? vector(d) : is_narrow(d) ? "float" : scalar(d); }
  // The type of `d` in memory.
  std::string mem(DType d) const {
    if (is_half(d)) return scalar(DType(ScalarType::UInt16));
    if (d.is_fp8()) return scalar(DType(ScalarType::UInt8));
    return d.is_bool() ? lang.bool_in_memory : scalar(d);
  }
  // aligned(elements): vector loads and stores may start at any element.
  std::string vector_typedef(DType d) const {
    d = lanes(d);
    return "typedef " + scalar(d) + " " + vector(d) + " __attribute__((vector_size(" +
           std::to_string(d.itemsize() * d.count) + "), aligned(" + std::to_string(d.itemsize()) + ")));\n";
  }
  // Every lane of a vector of `d` set to `x`.
  std::string splat(DType d, std::string x) const {
    if (d.is_bool()) x = "-" + x;  // a mask's true is all ones
    std::string s = "(" + vector(d) + "){" + x;
    for (int i = 1; i < d.count; i++) s += ", " + x;
    return s + "}";
  }

  // An integer CONST exactly as stored (doubles lose integers above 2^53).
  std::string int_literal(int64_t v, DType d) const {
    if (d.scalar == ScalarType::UInt64) return std::to_string(static_cast<uint64_t>(v)) + lang.uint64_suffix;
    if (d.scalar == ScalarType::Int32 && v > INT32_MIN) return std::to_string(v);
    std::string digits = v == INT64_MIN ? "(-9223372036854775807" + lang.int64_suffix + "-1)"
                                        : std::to_string(v) + lang.int64_suffix;
    return "((" + scalar(d) + ")" + digits + ")";
  }

  std::string literal(double v, DType d) const {
    if (d.is_bool()) return v != 0 ? "1" : "0";
    char buf[64];
    if (d.is_float()) {
      bool is_double = d.scalar == ScalarType::Float64;
      if (std::isnan(v)) return is_double ? lang.nan_double : lang.nan;
      if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (is_double ? lang.inf_double : lang.inf);
      std::snprintf(buf, sizeof buf, is_double ? "%.17g" : "%.9g", v);
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return is_double ? s : s + "f";
    }
    return int_literal(static_cast<int64_t>(v), d);
  }

  // A CONST; negative numbers in parentheses, so "x - -1" never becomes "x--1".
  std::string const_literal(const UOp& c) const {
    const int64_t* i = std::get_if<int64_t>(&c.arg);
    std::string text = !i ? literal(c.const_value(), c.dtype) : c.dtype.is_bool() ? (*i ? "1" : "0") : int_literal(*i, c.dtype);
    return text[0] == '-' ? "(" + text + ")" : text;
  }
};

// The math function an op is, or nullptr.
const char* math_function(Ops op) {
  switch (op) {
    case Ops::EXP: return "exp";
    case Ops::EXP2: return "exp2";
    case Ops::LOG: return "log";
    case Ops::LOG2: return "log2";
    case Ops::SIN: return "sin";
    case Ops::COS: return "cos";
    case Ops::SQRT: return "sqrt";
    case Ops::TRUNC: return "trunc";
    default: return nullptr;
  }
}

std::string alu(const UOp* u, const std::unordered_map<const UOp*, std::string>& name, const TypeNames& t) {
  auto s = [&](size_t i) -> const std::string& { return name.at(u->src[i].get()); };
  DType in = u->src.empty() ? u->dtype : u->src[0]->dtype;
  auto bin = [&](const char* op) { return "(" + s(0) + op + s(1) + ")"; };
  std::string e;
  if (const char* f = math_function(u->op)) e = t.lang.math(f, in, t.reg(in)) + "(" + s(0) + ")";
  else switch (u->op) {
    case Ops::RECIPROCAL: e = "(" + t.literal(1, u->dtype) + "/" + s(0) + ")"; break;
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
      // vectors (only languages with vectors render them: their preamble defines KILN_VMAX);
      // parenthesized, as a vector literal's commas would split the macro's arguments
      if (u->dtype.count > 1) e = "KILN_VMAX((" + s(0) + "), (" + s(1) + "), " + t.vector(mask_type(u->dtype)) + ")";
      else e = t.lang.max(s(0), s(1), t.reg(u->dtype));
      break;
    case Ops::WHERE:
      if (u->dtype.count > 1) e = "KILN_VWHERE((" + s(0) + "), (" + s(1) + "), (" + s(2) + "), " + t.vector(mask_type(u->dtype)) + ")";
      else e = "(" + s(0) + " ? " + s(1) + " : " + s(2) + ")";
      break;
    case Ops::GEP:  // a mask's lane is 0 or -1: as a bool, 0 or 1
      if (in.is_bool()) return "(" + s(0) + "[" + std::to_string(u->arg_as<int64_t>()) + "] != 0)";
      return s(0) + "[" + std::to_string(u->arg_as<int64_t>()) + "]";
    case Ops::VECTORIZE: {
      e = "(" + t.reg(u->dtype) + "){";
      for (size_t i = 0; i < u->src.size(); i++) e += (i ? ", " : "") + (u->dtype.is_bool() ? "-" + s(i) : s(i));
      return e + "}";
    }
    case Ops::CAST:
      e = "((" + t.reg(u->dtype) + ")" + s(0) + ")";
      break;
    case Ops::BITCAST: {
      std::string x = s(0);
      if (is_narrow(in)) x = "kiln_float_to_" + narrow_suffix(in) + "(" + x + ")";
      e = "KILN_BITCAST(" + t.mem(u->dtype) + ", " + t.mem(in) + ", " + x + ")";
      if (is_narrow(u->dtype)) return "kiln_" + narrow_suffix(u->dtype) + "_to_float(" + e + ")";
      return e;
    }
    default: throw_error(t.lang.name, " renderer: cannot render ", op_name(u->op));
  }
  // C computes 8- and 16-bit integers as int: wrap each result to its type, as storing it would.
  if (u->dtype.is_int() && u->dtype.itemsize() < 4 && u->dtype.count == 1) return "((" + t.scalar(u->dtype) + ")" + e + ")";
  // 16- and 8-bit floats compute in float; round each result back to its type.
  if (is_narrow(u->dtype) && u->op != Ops::WHERE)
    e = "kiln_" + narrow_suffix(u->dtype) + "_to_float(kiln_float_to_" + narrow_suffix(u->dtype) + "(" + e + "))";
  return e;
}

// The local dimension a RANGE is the work-item index along, or -1 for a loop.
int local_dim(const Kernel& k, const UOp* range) {
  auto it = std::find(k.local_axes.begin(), k.local_axes.end(), range->arg_as<RangeArg>().id);
  return it == k.local_axes.end() ? -1 : static_cast<int>(it - k.local_axes.begin());
}

// Index values (loop counters and int32 arithmetic of them) used only to address memory: as an
// INDEX's offset, in gates' comparisons, or by other such values. Their results are the same at
// any width short of overflow, which an address within a buffer never reaches; values a kernel
// stores, casts or computes with otherwise keep int32's wrapping arithmetic. (A loop's END and
// the AFTERs that order accumulators behind it only name the loop.)
std::unordered_set<const UOp*> address_values(const Kernel& k) {
  static constexpr OpSet kArithmetic{Ops::ADD, Ops::SUB, Ops::MUL, Ops::IDIV, Ops::MOD, Ops::NEG, Ops::SHL, Ops::SHR, Ops::AND};
  static constexpr OpSet kComparisons{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
  std::unordered_map<const UOp*, std::vector<const UOp*>> users;
  for (const UOpRef& u : k.linear)
    for (const UOpRef& s : u->src) users[s.get()].push_back(u.get());
  std::unordered_set<const UOp*> address;
  // users come after their sources: decide from the end
  for (auto it = k.linear.rbegin(); it != k.linear.rend(); ++it) {
    const UOp* u = it->get();
    if (u->dtype != dtypes::index || !(u->op == Ops::RANGE || kArithmetic.has(u->op))) continue;
    if (u->op == Ops::RANGE && local_dim(k, u) >= 0) continue;
    const auto found = users.find(u);
    if (found == users.end()) continue;
    bool only_addresses = true;
    for (const UOp* user : found->second) {
      const bool offset = user->op == Ops::INDEX && user->src.size() > 1 && user->src[1].get() == u;
      const bool kept = address.count(user) || (kComparisons.has(user->op) && user->dtype.count == 1) ||
                        ((user->op == Ops::END || user->op == Ops::AFTER) && u->op == Ops::RANGE);
      only_addresses &= offset || kept;
    }
    if (only_addresses) address.insert(u);
  }
  return address;
}

}  // namespace

std::string positional_parameters(std::vector<std::pair<int64_t, std::string>> params,
                                  const std::function<std::string(const std::string& type)>& declare,
                                  const std::string& unused_pointer) {
  std::sort(params.begin(), params.end());
  std::string s = "(";
  int64_t next = 0;
  for (const auto& [i, type] : params) {
    for (; next < i; next++) s += (next ? ", " : "") + unused_pointer + " unused" + std::to_string(next);
    s += (i ? ", " : "") + declare(type) + " data" + std::to_string(i);
    next = i + 1;
  }
  return s + ")";
}

std::string CStyleRenderer::render(const Kernel& k) const {
  const TypeNames t{lang_};
  std::unordered_map<const UOp*, int> uses;
  bool halves = false, fp8s = false;
  std::set<std::string> vector_types, max_types;
  std::map<std::string, std::string> math_definitions;  // by function and type
  std::vector<std::pair<int64_t, std::string>> params;
  // vector stores of a whole cache line to a buffer, past the caches where the kernel asks for it
  auto streams = [&](const UOp* store) {
    const DType stored = store->src[1]->dtype;
    return k.streaming_stores && lang_.streaming_store_bytes > 0 && store->src[0]->src[0]->op == Ops::PARAM &&
           stored.count > 1 && stored.itemsize() * stored.count == lang_.streaming_store_bytes;
  };
  bool streamed = false;
  for (const UOpRef& u : k.linear) {
    streamed |= u->op == Ops::STORE && streams(u.get());
    for (const UOpRef& s : u->src) uses[s.get()]++;
    halves |= is_half(u->dtype);
    fp8s |= u->dtype.is_fp8();
    if (u->dtype.count > 1) {
      if (!lang_.vectors)
        throw_error(lang_.name, " renderer: expected scalar code, got a ", u->dtype.name(), " ", op_name(u->op),
                    " (the device reports no vector registers)");
      vector_types.insert(t.vector_typedef(DType(u->dtype.scalar, u->dtype.count)));
    }
    if ((u->op == Ops::MAX || u->op == Ops::WHERE) && u->dtype.count > 1) vector_types.insert(t.vector_typedef(mask_type(u->dtype)));
    else if (u->op == Ops::MAX) max_types.insert(t.reg(u->dtype));
    if (const char* f = math_function(u->op); f && lang_.math_definition) {
      auto [it, fresh] = math_definitions.try_emplace(std::string(f) + " " + t.reg(u->dtype));
      if (fresh) it->second = lang_.math_definition(f, u->dtype, t.reg(u->dtype));
    }
    if (u->op == Ops::PARAM) params.emplace_back(u->arg_as<int64_t>(), t.mem(u->dtype));
  }
  std::unordered_map<const UOp*, std::string> name;  // the expression or variable for each node
  std::unordered_map<const UOp*, int> nesting;       // how deep each inlined expression is
  std::ostringstream head, body;
  const bool groups = !k.local_axes.empty();
  // the launch a kernel with work-groups expects, for readers of its source (DEBUG=4)
  if (groups)
    head << "/* launch: " << k.threads << " work-groups of [" << k.local_size[0] << ", " << k.local_size[1] << ", "
         << k.local_size[2] << "] work-items */\n";
  head << lang_.preamble << (halves ? kHalfPreamble : "") << (fp8s ? fp8_preamble() : "")
       << (streamed ? lang_.streaming_definition : "");
  for (const std::string& type : max_types) head << lang_.max_definition(type);
  for (const std::string& type : vector_types) head << type;
  for (const auto& [function, definition] : math_definitions) head << definition;
  head << lang_.signature(k.name, params);
  if (groups && lang_.group_index.empty())
    throw_error(lang_.name, " renderer: kernel ", k.name, " uses work-groups (LOCAL/GROUP opts), which ", lang_.name,
                " kernels do not have");
  if (!lang_.global_index.empty())
    head << "  const int core_id = (int)" << (groups ? lang_.group_index : lang_.global_index) << ";\n";
  if (lang_.thread_guard && !groups) head << lang_.thread_guard(k.threads);
  // a group's shared arrays live at the kernel's outermost scope (OpenCL C requires it); they hold
  // register values (a float16 partial as float)
  for (const UOpRef& u : k.linear)
    if (u->op == Ops::DEFINE_LOCAL) {
      const BufferArg& b = u->arg_as<BufferArg>();
      head << "  " << lang_.local_memory << " " << t.reg(DType(u->dtype.scalar)) << " local" << b.id << "[" << b.size << "];\n";
    }
  int depth = 1, counter = 0;
  auto line = [&](const std::string& text) { body << std::string(2 * depth, ' ') << text << "\n"; };
  const std::unordered_set<const UOp*> address = lang_.address_type.empty() ? std::unordered_set<const UOp*>{} : address_values(k);
  auto type_of = [&](const UOp* u) { return address.count(u) ? lang_.address_type : t.reg(u->dtype); };
  auto var = [&](const UOp* u, const std::string& prefix, const std::string& expr) {
    std::string v = prefix + std::to_string(counter++);
    line(type_of(u) + " " + v + " = " + expr + ";");
    name[u] = v;
  };
  auto src = [&](const UOp* u, size_t i) -> const std::string& { return name.at(u->src[i].get()); };

  for (const UOpRef& ref : k.linear) {
    const UOp* u = ref.get();
    switch (u->op) {
      case Ops::SINK: case Ops::GROUP: case Ops::NOOP: break;
      case Ops::PARAM: name[u] = "data" + std::to_string(u->arg_as<int64_t>()); break;
      case Ops::CONST:
        name[u] = u->dtype.count > 1 ? t.splat(u->dtype, t.const_literal(*u)) : t.const_literal(*u);
        break;
      case Ops::BUFFER: {  // a register accumulator
        std::string v = "acc" + std::to_string(u->arg_as<BufferArg>().id);
        line(t.reg(DType(u->dtype.scalar, u->dtype.count)) + " " + v + ";");
        name[u] = v;
        break;
      }
      case Ops::AFTER: name[u] = src(u, 0); break;
      case Ops::DEFINE_LOCAL: name[u] = "local" + std::to_string(u->arg_as<BufferArg>().id); break;
      case Ops::BARRIER: line(lang_.barrier); break;
      case Ops::RANGE: {
        if (const int dim = local_dim(k, u); dim >= 0) {  // not a loop: the work-item's index in its group
          name[u] = "((int)" + lang_.local_index(dim) + ")";
          break;
        }
        std::string v = "ridx" + std::to_string(u->arg_as<RangeArg>().id);
        const std::string& n = src(u, 0);
        if (u->arg_as<RangeArg>().type == AxisType::THREAD && k.threads > 1) {
          // this thread's share [lo, hi) of the loop
          std::string threads = std::to_string(k.threads), wide = "(" + t.scalar(DType(ScalarType::Int64)) + ")";
          const std::string type = type_of(u);
          line("const " + type + " " + v + "_lo = (" + type + ")(" + wide + "core_id * " + n + " / " + threads + "), " + v +
               "_hi = (" + type + ")(" + wide + "(core_id + 1) * " + n + " / " + threads + ");");
          line("for (" + type + " " + v + " = " + v + "_lo; " + v + " < " + v + "_hi; " + v + "++) {");
        } else {
          line("for (" + type_of(u) + " " + v + " = 0; " + v + " < " + n + "; " + v + "++) {");
        }
        depth++;
        name[u] = v;
        break;
      }
      case Ops::END:
        for (size_t i = 1; i < u->src.size(); i++) {
          if (local_dim(k, u->src[i].get()) >= 0) continue;
          depth--;
          line("}");
        }
        break;
      case Ops::INDEX: {
        // register accumulators are plain variables; global memory is pointer + offset; a group's
        // shared memory is an array
        const UOp* base = u->src[0].get();
        while (base->op == Ops::AFTER) base = base->src[0].get();
        if (u->src[0]->op == Ops::PARAM) name[u] = "(" + src(u, 0) + "+" + src(u, 1) + ")";
        else if (base->op == Ops::DEFINE_LOCAL) name[u] = src(u, 0) + "[" + src(u, 1) + "]";
        else name[u] = src(u, 0);
        break;
      }
      case Ops::LOAD: {
        const UOp* idx = u->src[0].get();
        // (a prefetch never faults: past a gate or the buffer's end it fetches nothing useful)
        if (auto ahead = k.prefetch.find(u); ahead != k.prefetch.end() && !lang_.prefetch.empty())
          line(lang_.prefetch + "(" + name.at(idx) + "+" + std::to_string(ahead->second) + ");");
        if (u->dtype.count > 1 && idx->src[0]->op == Ops::PARAM) {
          // a vector of neighbours; a gated one branches, as the lanes past the gate may be
          // past the buffer's end
          std::string value = "(*(" + t.reg(u->dtype) + "*)" + name.at(idx) + ")";
          if (idx->src.size() > 2)
            value = "(" + name.at(idx->src[2].get()) + " ? " + value + " : " + t.splat(u->dtype, t.literal(0, u->dtype)) + ")";
          var(u, "val", value);
          break;
        }
        std::string value = idx->src[0]->op == Ops::PARAM ? "(*" + name.at(idx) + ")" : name.at(idx);
        if (idx->src[0]->op == Ops::PARAM && is_narrow(u->dtype)) value = "kiln_" + narrow_suffix(u->dtype) + "_to_float" + value;
        // A gated load reads only where its gate holds (?: evaluates one side), which C compilers
        // turn into a masked load, and into masked vector loads in a loop they vectorize. (Reading
        // element 0 where invalid and selecting after made the address a select, a gather to the
        // vectorizer: a conv's zero-padding copy stayed scalar.)
        if (idx->src.size() > 2) value = "(" + name.at(idx->src[2].get()) + " ? " + value + " : " + t.literal(0, u->dtype) + ")";
        var(u, "val", value);
        break;
      }
      case Ops::STORE: {
        const UOp* idx = u->src[0].get();
        std::string value = src(u, 1);
        // a gated store (a PADTO loop's extra iterations) writes nothing where the gate is false
        const std::string gate = idx->src.size() > 2 ? "if (" + name.at(idx->src[2].get()) + ") " : "";
        const DType stored = u->src[1]->dtype;
        if (streams(u)) {
          // (the value in parentheses: a vector literal's commas would split the macro's arguments)
          line(gate + lang_.streaming_store + "((" + t.reg(stored) + "*)" + name.at(idx) + ", (" + value + "));");
        } else if (idx->src[0]->op == Ops::PARAM && stored.count > 1) {
          line(gate + "*(" + t.reg(stored) + "*)" + name.at(idx) + " = " + value + ";");
        } else if (idx->src[0]->op == Ops::PARAM) {
          if (is_narrow(u->src[1]->dtype)) value = "kiln_float_to_" + narrow_suffix(u->src[1]->dtype) + "(" + value + ")";
          line(gate + "*" + name.at(idx) + " = " + value + ";");
        } else {
          line(name.at(idx) + " = " + value + ";");
        }
        break;
      }
      default: {
        std::string expr = alu(u, name, t);
        // Inline single-use results, but not without limit: a deep chain would become one
        // expression too deeply nested for the compiler.
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
  if (streamed) line(lang_.streaming_fence);
  head << body.str() << "}\n";
  return head.str();
}

}  // namespace kiln::renderer
