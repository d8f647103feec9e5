// Bad inputs: every one throws kiln::Error, eagerly (when the op is called, not at realize), with a
// message that says what was expected and what was given (checked by substrings: the op's name and
// the shapes/axes/values involved).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"
#include "runtime/device.h"
#include "support/env.h"

namespace {

using kiln::Tensor;
using ref::Shape;
namespace dtypes = kiln::dtypes;

// Runs `f`; returns the kiln::Error message, or fails the test (with `what`) if nothing or something
// else is thrown.
std::string error_of(const std::function<void()>& f, const std::string& what) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a non-kiln exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << what << ": did not throw";
  return "";
}

// A shape in any of the usual spellings: "(2, 3)", "(2,3)", "[2, 3]", "{2, 3}", "2x3"; "(3,)" or "(3)".
bool mentions_shape(const std::string& msg, const Shape& s) {
  std::vector<std::string> forms;
  for (const char* sep : {", ", ","}) {
    std::string inner;
    for (size_t i = 0; i < s.size(); i++) inner += (i ? sep : "") + std::to_string(s[i]);
    forms.push_back("(" + inner + ")");
    forms.push_back("[" + inner + "]");
    forms.push_back("{" + inner + "}");
    if (s.size() == 1) forms.push_back("(" + inner + ",)");
  }
  std::string x;
  for (size_t i = 0; i < s.size(); i++) x += (i ? "x" : "") + std::to_string(s[i]);
  if (s.size() > 1) forms.push_back(x);
  for (const std::string& f : forms)
    if (msg.find(f) != std::string::npos) return true;
  return false;
}

bool contains(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

// EXPECT that `stmt` throws kiln::Error whose message contains each of the given substrings.
#define EXPECT_KILN_ERROR(stmt, ...)                                                                           \
  do {                                                                                                         \
    std::string msg_ = error_of([&] { (void)(stmt); }, #stmt);                                                 \
    for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__})                                     \
      EXPECT_TRUE(contains(msg_, part_)) << #stmt << ": message \"" << msg_ << "\" lacks \"" << part_ << "\""; \
  } while (0)

// EXPECT that `stmt` throws kiln::Error whose message mentions each of the given shapes.
#define EXPECT_KILN_ERROR_SHAPES(stmt, ...)                                                         \
  do {                                                                                              \
    std::string msg_ = error_of([&] { (void)(stmt); }, #stmt);                                      \
    for (const Shape& s_ : std::vector<Shape>{__VA_ARGS__})                                         \
      EXPECT_TRUE(mentions_shape(msg_, s_))                                                         \
          << #stmt << ": message \"" << msg_ << "\" does not mention shape " << ref::shape_str(s_); \
  } while (0)

Tensor t23() { return Tensor::zeros({2, 3}); }

TEST(Errors, ReshapeIncompatible) {
  EXPECT_KILN_ERROR_SHAPES(t23().reshape({4, 2}), Shape{2, 3}, Shape{4, 2});
  EXPECT_KILN_ERROR(t23().reshape({4, 2}), "reshape");
  EXPECT_KILN_ERROR_SHAPES(t23().reshape({7}), Shape{2, 3}, Shape{7});
  EXPECT_KILN_ERROR(t23().reshape({-1, 4}), "reshape", "4");    // 6 is not divisible by 4
  EXPECT_KILN_ERROR(t23().reshape({-1, -1}), "reshape", "-1");  // two inferred dims
  EXPECT_KILN_ERROR(t23().reshape({-2, -3}), "reshape");
  EXPECT_KILN_ERROR(Tensor::zeros({0, 3}).reshape({-1, 0}), "reshape");  // nothing to infer from
}

TEST(Errors, BroadcastIncompatibleInBinaryOps) {
  Tensor a = Tensor::zeros({3}), b = Tensor::zeros({4});
  EXPECT_KILN_ERROR_SHAPES(a + b, Shape{3}, Shape{4});
  EXPECT_KILN_ERROR_SHAPES(a * b, Shape{3}, Shape{4});
  Tensor c = Tensor::zeros({2, 3, 5}), d = Tensor::zeros({4, 5});
  EXPECT_KILN_ERROR_SHAPES(c - d, Shape{2, 3, 5}, Shape{4, 5});
  EXPECT_KILN_ERROR_SHAPES(c / d, Shape{2, 3, 5}, Shape{4, 5});
  EXPECT_KILN_ERROR_SHAPES(c.maximum(d), Shape{2, 3, 5}, Shape{4, 5});
  EXPECT_KILN_ERROR_SHAPES(a.lt(b), Shape{3}, Shape{4});
  EXPECT_KILN_ERROR_SHAPES(a.pow(b), Shape{3}, Shape{4});
  // where: all three shapes must broadcast together
  Tensor cond = Tensor::zeros({3}, dtypes::bool_);
  EXPECT_KILN_ERROR_SHAPES(cond.where(Tensor::zeros({3}), Tensor::zeros({2})), Shape{2});
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({2, 1}).where(a, Tensor::zeros({3, 1})), Shape{3, 1});
}

TEST(Errors, MatmulInnerDimensionMismatch) {
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({2, 3}).matmul(Tensor::zeros({4, 5})), Shape{2, 3}, Shape{4, 5});
  EXPECT_KILN_ERROR(Tensor::zeros({2, 3}).matmul(Tensor::zeros({4, 5})), "matmul", "3", "4");
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({3}).matmul(Tensor::zeros({4})), Shape{3}, Shape{4});
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({2, 3, 4}).matmul(Tensor::zeros({3, 4, 5})), Shape{2, 3, 4},
                           Shape{3, 4, 5});  // batch dims 2 and 3 do not broadcast
  EXPECT_KILN_ERROR(Tensor::full({}, 1.0).matmul(Tensor::zeros({3})), "matmul");
}

TEST(Errors, BadAxisInReductions) {
  Tensor t = t23();
  EXPECT_KILN_ERROR(t.sum({2}), "axis", "2");
  EXPECT_KILN_ERROR(t.sum({-3}), "axis", "-3");
  EXPECT_KILN_ERROR(t.max({5}), "axis", "5");
  EXPECT_KILN_ERROR(t.min({0, 2}), "axis", "2");
  EXPECT_KILN_ERROR(t.mean({-4}), "axis", "-4");
  EXPECT_KILN_ERROR(t.prod({3}), "axis", "3");
  EXPECT_KILN_ERROR(t.sum({0, 0}), "axis", "0");  // repeated
  EXPECT_KILN_ERROR(t.sum({1, -1}), "axis");      // the same axis twice, spelled differently
  EXPECT_KILN_ERROR(t.argmax(2), "axis", "2");
  EXPECT_KILN_ERROR(t.argmin(-3), "axis", "-3");
  EXPECT_KILN_ERROR(t.softmax(2), "axis", "2");
  EXPECT_KILN_ERROR(t.log_softmax(-3), "axis", "-3");
  EXPECT_KILN_ERROR(Tensor::full({}, 1.0).sum({1}), "axis", "1");  // a 0-d tensor takes axis 0 or -1 only (PyTorch's rule)
  EXPECT_KILN_ERROR_SHAPES(t.sum({2}), Shape{2, 3});
}

TEST(Errors, BadPermutationAndTranspose) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_KILN_ERROR(t.permute({0, 0, 1}), "permute", "0");    // repeated axis
  EXPECT_KILN_ERROR(t.permute({0, 1}), "permute", "3", "2");  // too few axes: expected 3, got 2
  EXPECT_KILN_ERROR(t.permute({0, 1, 2, 3}), "permute");      // too many
  EXPECT_KILN_ERROR(t.permute({0, 1, 3}), "axis", "3");       // out of range
  EXPECT_KILN_ERROR(t.permute({0, 1, -4}), "axis", "-4");
  EXPECT_KILN_ERROR(t.transpose(0, 3), "axis", "3");
  EXPECT_KILN_ERROR(t.transpose(-4, 0), "axis", "-4");
  EXPECT_KILN_ERROR(Tensor::zeros({5}).transpose(), "axis");  // default (0, 1) needs 2 dims
}

TEST(Errors, PadAndShrink) {
  Tensor t = t23();
  EXPECT_KILN_ERROR(t.pad({{-1, 0}, {0, 0}}), "pad", "-1");
  EXPECT_KILN_ERROR(t.pad({{0, 0}, {0, -2}}), "pad", "-2");
  EXPECT_KILN_ERROR(t.pad({{1, 1}}), "pad", "2", "1");                // one pair for two axes
  EXPECT_KILN_ERROR(t.shrink({{0, 2}, {0, 4}}), "shrink", "4", "3");  // end past the size 3
  EXPECT_KILN_ERROR(t.shrink({{-1, 2}, {0, 3}}), "shrink", "-1");
  EXPECT_KILN_ERROR(t.shrink({{2, 1}, {0, 3}}), "shrink", "2", "1");  // begin after end
  EXPECT_KILN_ERROR(t.shrink({{0, 2}}), "shrink", "2", "1");          // one pair for two axes
}

TEST(Errors, ExpandIncompatible) {
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({3, 2}).expand({3, 4}), Shape{3, 2}, Shape{3, 4});
  EXPECT_KILN_ERROR(Tensor::zeros({3, 2}).expand({3, 4}), "expand");
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({3}).expand({2}), Shape{3}, Shape{2});
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({2, 3}).expand({3}), Shape{2, 3}, Shape{3});  // fewer dims
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({3, 1}).expand({4, 3, 0, 2}), Shape{3, 1});   // 3 -> 0 is not a broadcast
}

// -1 keeps an existing axis; a new leading axis has no size to keep, and other negative sizes are
// never sizes.
TEST(Errors, ExpandToNegativeSizes) {
  EXPECT_KILN_ERROR(Tensor::zeros({2}).expand({-1, 2}), "expand", "axis 0 is new", "got -1");
  EXPECT_KILN_ERROR_SHAPES(Tensor::zeros({2}).expand({-1, 2}), Shape{2}, Shape{-1, 2});
  EXPECT_KILN_ERROR(Tensor::zeros({3, 1}).expand({3, -2}), "expand", "axis 1", "got -2");
  EXPECT_KILN_ERROR(Tensor::zeros({1}).expand({-3}), "expand", "got -3");
  EXPECT_KILN_ERROR(Tensor::zeros({1}).expand({-2, 1}), "expand", "axis 0 is new", "got -2");
  EXPECT_EQ(Tensor::zeros({2}).expand({3, -1}).shape(), (Shape{3, 2}));
}

// Every op taking an axis reports a bad one under its own name (not a helper's), with the shape
// and the valid range.
TEST(Errors, BadAxisErrorsStartWithTheOpName) {
  Tensor t = t23();
  Tensor idx = Tensor::zeros({2, 3}, dtypes::int32), stats = Tensor::zeros({3});
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"squeeze", [&] { t.squeeze(2); }},
      {"unsqueeze", [&] { t.unsqueeze(3); }},
      {"unsqueeze", [&] { t.unsqueeze(-4); }},
      {"transpose", [&] { t.transpose(0, 2); }},
      {"permute", [&] { t.permute({0, 2}); }},
      {"flatten", [&] { t.flatten(0, 2); }},
      {"flip", [&] { t.flip({-3}); }},
      {"sum", [&] { t.sum({2}); }},
      {"sum", [&] { t.sum(2); }},
      {"max", [&] { t.max(-3); }},
      {"min", [&] { t.min({0, 2}); }},
      {"mean", [&] { t.mean(2, true); }},
      {"prod", [&] { t.prod({3}); }},
      {"var", [&] { t.var(2); }},
      {"std", [&] { t.std({2}); }},
      {"layernorm", [&] { t.layernorm({2}); }},
      {"batchnorm", [&] { t.batchnorm({}, {}, stats, stats, {2}); }},
      {"argmax", [&] { t.argmax(2); }},
      {"argmin", [&] { t.argmin(2); }},
      {"softmax", [&] { t.softmax(2); }},
      {"log_softmax", [&] { t.log_softmax(2); }},
      {"logsumexp", [&] { t.logsumexp(2); }},
      {"cumsum", [&] { t.cumsum(2); }},
      {"gather", [&] { t.gather(2, idx); }},
      {"index_select", [&] { t.index_select(2, Tensor::zeros({1}, dtypes::int32)); }},
      {"scatter", [&] { t.scatter(2, idx, t); }},
      {"cat", [&] { Tensor::cat({t, t}, 2); }},
      {"stack", [&] { Tensor::stack({t, t}, 3); }},
      {"split", [&] { t.split(1, 2); }},
      {"chunk", [&] { t.chunk(2, 2); }},
  };
  for (const auto& [op, call] : calls) {
    std::string msg = error_of(call, op);
    EXPECT_EQ(msg.rfind(op + ": axis ", 0), 0u) << "message \"" << msg << "\" does not start with \"" << op << ": axis\"";
    EXPECT_TRUE(mentions_shape(msg, {2, 3})) << msg;
  }
  EXPECT_KILN_ERROR(t.squeeze(2), "expected -2 to 1");
  EXPECT_KILN_ERROR(t.unsqueeze(3), "expected -3 to 2");  // one more place than there are axes
  EXPECT_KILN_ERROR(Tensor::full({}, 1.0).sum(1), "sum: axis 1");
  EXPECT_KILN_ERROR(t.sum({1, -1}), "sum: axes (1, -1) name axis 1 twice");
}

TEST(Errors, FlipFlattenSqueezeUnsqueeze) {
  Tensor t = t23();
  EXPECT_KILN_ERROR(t.flip({2}), "axis", "2");
  EXPECT_KILN_ERROR(t.flip({0, 0}), "flip", "0");
  EXPECT_KILN_ERROR(t.unsqueeze(4), "axis", "4");
  EXPECT_KILN_ERROR(t.squeeze(2), "axis", "2");
  EXPECT_KILN_ERROR(t.flatten(3), "axis", "3");
}

// 0-d tensors have no axis to join along (tinygrad and PyTorch refuse too); a scan of one is itself.
TEST(Errors, CatOfZeroDimensionalTensors) {
  Tensor s = Tensor::full({}, 3.5);
  EXPECT_KILN_ERROR(Tensor::cat({s, s}), "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_KILN_ERROR(Tensor::cat({Tensor::ones({1}), s}), "cat: zero-dimensional tensor (at position 1)");
  Tensor scan = s.cumsum();
  EXPECT_EQ(scan.shape(), Shape{});
  EXPECT_EQ(scan.item<float>(), 3.5f);
}

TEST(Errors, ArangeArguments) {
  EXPECT_KILN_ERROR(Tensor::arange(0, 5, 0), "arange", "step", "0");
  EXPECT_KILN_ERROR(Tensor::arange(0, INFINITY), "arange", "finite", "inf");
  EXPECT_KILN_ERROR(Tensor::arange(NAN), "arange", "finite", "nan");
}

TEST(Errors, FloorDivisionOfBools) {
  Tensor b = Tensor::zeros({2}, dtypes::bool_);
  EXPECT_KILN_ERROR(b.idiv(b), "idiv", "bool");
  EXPECT_KILN_ERROR(b % b, "mod", "bool");
}

TEST(Errors, ReadbackWithTheWrongElementType) {
  Tensor f = Tensor::zeros({3});
  EXPECT_KILN_ERROR(f.to_vector<int32_t>(), "float32", "int32");
  EXPECT_KILN_ERROR(f.to_vector<double>(), "float32", "float64");
  EXPECT_KILN_ERROR(f.item<float>(), "item");  // three elements, not one
  Tensor i = Tensor::zeros({2}, dtypes::int32);
  EXPECT_KILN_ERROR(i.to_vector<float>(), "int32", "float32");
  EXPECT_KILN_ERROR(i.to_vector<int64_t>(), "int32", "int64");
  EXPECT_KILN_ERROR(i.to_vector<uint32_t>(), "int32", "uint32");
  EXPECT_KILN_ERROR(Tensor::zeros({1}, dtypes::bool_).item<uint8_t>(), "bool", "uint8");
  EXPECT_KILN_ERROR(Tensor::zeros({1}, dtypes::float16).item<float>(), "float16", "float32");
  EXPECT_KILN_ERROR(Tensor::zeros({2, 3}).argmax(1).to_vector<int64_t>(), "int32", "int64");
}

TEST(Errors, FromVectorSizeMismatch) {
  EXPECT_KILN_ERROR(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), "3");
  EXPECT_KILN_ERROR_SHAPES(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), Shape{2, 2});
  EXPECT_KILN_ERROR(Tensor::from_vector<int32_t>({1, 2}, {}), "2");
  EXPECT_KILN_ERROR(Tensor::from_vector<float>({1, 2, 3, 4}, {-2, -2}), "-2");
}

TEST(Errors, ErrorsAreRuntimeErrors) {
  // kiln::Error derives from std::runtime_error, so generic handlers catch it
  EXPECT_THROW(t23().reshape({5}), std::runtime_error);
  EXPECT_THROW(t23().reshape({5}), kiln::Error);
}

TEST(Errors, ErrorsDoNotBreakLaterWork) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_THROW(a + Tensor::zeros({4}), kiln::Error);
  EXPECT_THROW(a.reshape({2, 2}), kiln::Error);
  EXPECT_EQ((a * 2).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

// ============================================================================ devices
// The Tensor API has no device argument; devices are chosen by name through the registry and DEV.

TEST(Errors, UnknownDeviceByName) {
  EXPECT_KILN_ERROR(kiln::runtime::get_device("NOPE"), "NOPE", "CPU");  // lists the registered devices
  EXPECT_KILN_ERROR(kiln::runtime::get_device(""), "CPU");
  EXPECT_NO_THROW(kiln::runtime::get_device("cpu"));
  EXPECT_NO_THROW(kiln::runtime::get_device("CPU:0"));
}

TEST(Errors, UnknownDeviceViaDEV) {
  {
    kiln::env::ScopedEnv dev("DEV", "NOPE");
    EXPECT_KILN_ERROR(kiln::runtime::default_device(), "NOPE", "CPU");
  }
  // restored: the default device works again, and tensors land on it
  EXPECT_EQ(kiln::runtime::default_device(), "CPU");
  EXPECT_EQ(Tensor::zeros({2}).to_vector<float>(), (std::vector<float>{0, 0}));
  {
    kiln::env::ScopedEnv dev("DEV", "cpu");
    EXPECT_EQ(kiln::runtime::default_device(), "CPU");
  }
}

TEST(Errors, TensorsReportTheirDevice) {
  std::string dev = Tensor::from_vector<float>({1}, {1}).device();
  EXPECT_TRUE(dev == "CPU" || dev.rfind("CPU:", 0) == 0) << "device() = " << dev;
}

TEST(Errors, TooManyElementsForInt32Indexing) {
  EXPECT_KILN_ERROR(Tensor::zeros({100000, 100000}), "(100000, 100000)", "int32");
  EXPECT_KILN_ERROR(Tensor::eye(50000), "(50000, 50000)", "int32");
  EXPECT_KILN_ERROR(Tensor::arange(0, 1e12), "1e+12", "at most");
  // a broadcast intermediate larger than that is fine: it is never materialized
  Tensor a = Tensor::ones({2048, 1024}), b = Tensor::ones({1024, 2048});  // 2^32 products
  // the matmul, and on the CPU perhaps copies for its register tiles (schedule/matmul_tiles.cpp): b in
  // column panels, a padded to whole tiles and the result cut back
  EXPECT_LE(a.matmul(b).schedule().size(), 4u);
}

// The kinds Python maps to IndexError, ValueError, TypeError (tinygrad's and mostly PyTorch's choices).
TEST(Errors, KindsOfErrors) {
  Tensor t = t23(), s = Tensor::full({}, 2.0);
  EXPECT_THROW(t.sum({2}), kiln::IndexError);
  EXPECT_THROW(s.sum({1}), kiln::IndexError);
  EXPECT_THROW(t.cumsum(-3), kiln::IndexError);
  EXPECT_THROW(s.cumsum(1), kiln::IndexError);
  EXPECT_THROW(t.squeeze(2), kiln::IndexError);
  EXPECT_THROW(Tensor::stack({t}, 4), kiln::IndexError);
  EXPECT_THROW(t.unfold(2, 1, 1), kiln::IndexError);
  EXPECT_THROW(Tensor::zeros({2, -3}), kiln::ValueError);
  EXPECT_THROW(Tensor::rand({-1}), kiln::ValueError);
  EXPECT_THROW(t.repeat({2}), kiln::ValueError);
  EXPECT_THROW(t.repeat({2, -1}), kiln::ValueError);
  EXPECT_THROW(t.reshape({4, 2}), kiln::ValueError);
  EXPECT_THROW(Tensor::full({2}, 1.0, kiln::dtypes::int32).one_hot(-1), kiln::ValueError);
  EXPECT_THROW(t.scatter(0, Tensor::zeros({1, 3}, kiln::dtypes::int32), t, "typo"), kiln::TypeError);
  // the rest stay plain kiln::Error; every kind is one
  EXPECT_THROW(t.reshape({-1, -1}), kiln::Error);
  try {
    t.reshape({-1, -1});
  } catch (const kiln::Error& e) {
    EXPECT_EQ(dynamic_cast<const kiln::ValueError*>(&e), nullptr) << e.what();
  }
  try {
    kiln::throw_not_implemented("op: mode ", 3);
  } catch (const kiln::Error& e) {
    EXPECT_NE(dynamic_cast<const kiln::NotImplementedError*>(&e), nullptr);
    EXPECT_STREQ(e.what(), "op: mode 3");
  }
}

// A 0-d tensor's one implicit axis (0 or -1, as PyTorch): ops along it see shape (1,).
TEST(Errors, ZeroDimensionalTensorsTakeAxisZeroAndMinusOne) {
  Tensor s = Tensor::full({}, 1.5);
  for (int axis : {0, -1}) {
    EXPECT_EQ(s.sum({axis}).shape(), Shape{});
    EXPECT_EQ(s.sum({axis}).item<float>(), 1.5f);
    EXPECT_EQ(s.squeeze(axis).shape(), Shape{});
    EXPECT_EQ(s.cumprod(axis).item<float>(), 1.5f);
    EXPECT_EQ(s.log_softmax(axis).item<float>(), 0.0f);  // x - log(exp(x))
    EXPECT_EQ(s.softmax(axis).item<float>(), 1.0f);
    EXPECT_FLOAT_EQ(s.logsumexp(axis).item<float>(), 1.5f);
    EXPECT_EQ(s.logsumexp(axis, true).shape(), Shape{});
  }
}

}  // namespace
