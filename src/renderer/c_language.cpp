// C for the CPU (clang/gcc): GNU C with the compilers' vector extensions and builtins.
#include "kiln/error.h"
#include "renderer/c_math.h"
#include "renderer/cstyle_renderer.h"

namespace kiln::renderer {
namespace {

// kiln_log: log stays libm's scalar function (1 ULP): glibc's vector log (libmvec, which clang calls
// for loops of exp, sin, cos, ...; cc_compiler.cpp) is up to 4 ULP off.
// KILN_VMAX: max of vectors, selecting bitwise with the comparison's integer mask (C has no ?: on
// vectors). Both name `a` once: a max over an unrolled reduction nests them, and each copy of `a`
// in the expansion (as __typeof__(a) would add) multiplies the source by the depth (16 nested
// vector maxes: clang took 24 GB).
// KILN_VWHERE: a select of vectors by a mask (a bool vector), bitwise for the same reason.
const char* kPreamble = R"(#define KILN_MAX(a, b) ({ __auto_type a_ = (a); __typeof__(a_) b_ = (b); (a_ > b_ || a_ != a_) ? a_ : b_; })
#define KILN_VMAX(a, b, mask) ({ __auto_type a_ = (a); __typeof__(a_) b_ = (b); mask m_ = (mask)((a_ > b_) | (a_ != a_)); \
  (__typeof__(a_))(((mask)a_ & m_) | ((mask)b_ & ~m_)); })
#define KILN_VWHERE(c, a, b, mask) ({ mask c_ = (c); __auto_type a_ = (a); __typeof__(a_) b_ = (b); \
  (__typeof__(a_))(((mask)a_ & c_) | ((mask)b_ & ~c_)); })
#define KILN_BITCAST(to, from, x) ({ union { from f; to t; } u_; u_.f = (x); u_.t; })
static __attribute__((noinline, unused)) float kiln_logf(float x) { return __builtin_logf(x); }
static __attribute__((noinline, unused)) double kiln_log(double x) { return __builtin_log(x); }
)";

// KILN_STREAM: a 64-byte store past the caches (x86's non-temporal vmovntps, which needs a 64-byte
// aligned address: checked, a misaligned one is stored plainly; elsewhere a plain store) and
// KILN_STREAM_FENCE, which orders a thread's streamed stores before whatever follows its share of
// the kernel (the thread pool's handshake need not order them).
const char* kStreamingStores = R"(#if defined(__x86_64__) && defined(__AVX512F__)
#define KILN_STREAM(p, v) do { __auto_type p_ = (p); __auto_type v_ = (v); \
  if ((unsigned long long)p_ & 63) *p_ = v_; else __asm__ volatile("vmovntps %1, %0" : "=m"(*p_) : "v"(v_)); } while (0)
#define KILN_STREAM_FENCE() __asm__ volatile("sfence" ::: "memory")
#else
#define KILN_STREAM(p, v) (*(p) = (v))
#define KILN_STREAM_FENCE() ((void)0)
#endif
)";

CStyleLanguage c_language() {
  CStyleLanguage c;
  c.name = "C";
  c.preamble = kPreamble;
  c.bool_in_memory = "_Bool";
  c.address_type = "long long";
  c.int64_suffix = "ll";
  c.uint64_suffix = "ull";
  c.nan = "__builtin_nanf(\"\")";
  c.nan_double = "__builtin_nan(\"\")";
  c.inf = "__builtin_inff()";
  c.inf_double = "__builtin_inf()";
  // The CPU program's ABI (cpu_program.h): buffers as an array, the thread index as an argument.
  c.signature = [](const std::string& kernel, const std::vector<std::pair<int64_t, std::string>>& params) {
    std::string s = "void " + kernel + "(void** restrict bufs, const long long* restrict vals, int core_id) {\n";
    for (const auto& [i, type] : params)
      s += "  " + type + "* restrict data" + std::to_string(i) + " = (" + type + "*)bufs[" + std::to_string(i) + "];\n";
    return s;
  };
  // float exp and exp2 are defined inline (c_math.cpp); the rest are libm's, or libmvec's where
  // clang vectorizes a loop of them.
  c.math = [](const std::string& f, DType d, const std::string& type) {
    const bool is_double = d.scalar == ScalarType::Float64;
    if (auto name = c_inline_math_name(f, type); name && !is_double) return *name;
    if (d.count > 1) throw_error("C renderer: no vector version of ", f, " for ", type);
    return (f == "log" ? "kiln_" : "__builtin_") + f + (is_double ? "" : "f");
  };
  c.math_definition = [](const std::string& f, DType d, const std::string& type) {
    return d.scalar == ScalarType::Float64 ? std::string() : c_inline_math_definition(f, type, d.count > 1);
  };
  c.max = [](const std::string& a, const std::string& b, const std::string&) { return "KILN_MAX(" + a + ", " + b + ")"; };
  c.max_definition = [](const std::string&) { return std::string(); };
  c.streaming_store_bytes = 64;
  c.streaming_store = "KILN_STREAM";
  c.streaming_definition = kStreamingStores;
  c.streaming_fence = "KILN_STREAM_FENCE();";
  c.prefetch = "__builtin_prefetch";
  return c;
}

}  // namespace

const Renderer& c_renderer() {
  static const CStyleRenderer r(c_language());
  return r;
}

}  // namespace kiln::renderer
