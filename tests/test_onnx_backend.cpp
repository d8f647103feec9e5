// The ONNX backend test suite (Debian's libonnx-testdata): every case's model run on its
// test_data_set_N inputs and compared with its outputs at the backend runner's tolerances (rtol 1e-3,
// atol 1e-7, same dtype and shape). Cases kiln cannot run yet are listed, each with a reason, in
// tests/onnx_expected_failures.txt: an unlisted failure or a listed pass fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "kiln/onnx.h"
#include "onnx/tensor_proto.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

constexpr double kRtol = 1e-3, kAtol = 1e-7;

// "category/case  reason" lines; '#' starts a comment line.
std::map<std::string, std::string> expected_failures() {
  std::map<std::string, std::string> cases;
  std::ifstream file(KILN_ONNX_EXPECTED_FAILURES);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.find_first_of(" \t");
    cases[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
  }
  return cases;
}

// Empty when `got` matches `want`, else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) return "dtype " + got.dtype().name() + ", expected " + want.dtype().name();
  if (got.shape() != want.shape())
    return "shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape());
  if (got.numel() == 0) return "";
  auto g = got.cast(dtypes::float64).reshape({-1}).to_vector<double>();
  auto w = want.cast(dtypes::float64).reshape({-1}).to_vector<double>();
  for (size_t i = 0; i < g.size(); i++) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (g[i] == w[i] || std::abs(g[i] - w[i]) <= kAtol + kRtol * std::abs(w[i])) continue;
    return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
  }
  return "";
}

// ONNX's test generator stores bfloat16 data as uint16 bit patterns: read them as bfloat16.
Tensor as_declared(Tensor t, DType declared) {
  return declared == dtypes::bfloat16 && t.dtype() == dtypes::uint16 ? t.bitcast(dtypes::bfloat16) : t;
}

// Empty when every data set of the case passes, else the first failure.
std::string run_case(const fs::path& dir) {
  if (!fs::exists(dir / "model.onnx")) return "no model.onnx";
  try {
    auto model = kiln::onnx::Model::load(dir / "model.onnx");
    for (int set = 0; fs::exists(dir / ("test_data_set_" + std::to_string(set))); set++) {
      fs::path data = dir / ("test_data_set_" + std::to_string(set));
      std::map<std::string, Tensor> inputs;
      for (size_t k = 0; fs::exists(data / ("input_" + std::to_string(k) + ".pb")); k++) {
        auto proto = kiln::onnx::read_tensor_proto(data / ("input_" + std::to_string(k) + ".pb"));
        if (k >= model.inputs().size()) return "more input files than model inputs";
        const auto& info = model.inputs()[k];
        inputs.emplace(info.name, as_declared(kiln::onnx::tensor_from_proto(proto, data), info.dtype));
      }
      auto outputs = model.run(inputs);
      for (size_t k = 0; fs::exists(data / ("output_" + std::to_string(k) + ".pb")); k++) {
        auto proto = kiln::onnx::read_tensor_proto(data / ("output_" + std::to_string(k) + ".pb"));
        const auto& info = model.outputs().at(k);
        const std::string& name = info.name;
        Tensor want = as_declared(kiln::onnx::tensor_from_proto(proto, data), info.dtype);
        std::string diff = compare(outputs.at(name), want);
        if (!diff.empty()) return "output '" + name + "': " + diff;
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnnxBackend, Suite) {
  if (!fs::exists(KILN_ONNX_TESTDATA)) GTEST_SKIP() << "libonnx-testdata is not installed";
  auto expected = expected_failures();
  std::set<std::string> seen;
  for (std::string category : {"node", "pytorch-converted", "pytorch-operator", "simple", "real"}) {
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(fs::path(KILN_ONNX_TESTDATA) / category)) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    int passed = 0;
    for (const auto& dir : cases) {
      std::string id = category + "/" + dir.filename().string();
      seen.insert(id);
      std::string failure = run_case(dir);
      bool listed = expected.count(id) > 0;
      if (failure.empty()) passed++;
      if (failure.empty() && listed) ADD_FAILURE() << id << " passes now: remove it from onnx_expected_failures.txt";
      if (!failure.empty() && !listed) ADD_FAILURE() << id << " fails: " << failure;
    }
    std::printf("onnx backend %-18s %4d / %4zu passed\n", category.c_str(), passed, cases.size());
  }
  for (const auto& [id, reason] : expected)
    if (!seen.count(id)) ADD_FAILURE() << id << " is listed in onnx_expected_failures.txt but is not a case";
}

// An unsupported op is reported by load(), naming the node, the op and the opset.
TEST(OnnxBackend, UnsupportedOpFailsAtLoad) {
  fs::path model = fs::path(KILN_ONNX_TESTDATA) / "node/test_stft/model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "libonnx-testdata is not installed";
  try {
    kiln::onnx::Model::load(model);
    FAIL() << "load() accepted an STFT node";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("op STFT"), std::string::npos) << msg;
    EXPECT_NE(msg.find("opset 17"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not supported"), std::string::npos) << msg;
  }
}

// So is an unsupported attribute value, before any input is given.
TEST(OnnxBackend, UnsupportedAttributeFailsAtLoad) {
  ::onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(17);
  auto* node = proto.mutable_graph()->add_node();
  node->set_name("shift_up");
  node->set_op_type("BitShift");
  node->add_input("x");
  node->add_input("y");
  node->add_output("z");
  auto* attr = node->add_attribute();
  attr->set_name("direction");
  attr->set_type(::onnx::AttributeProto::STRING);
  attr->set_s("UP");
  fs::path path = fs::temp_directory_path() / "kiln_onnx_bad_attribute.onnx";
  {
    std::ofstream file(path, std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&file));
  }
  try {
    kiln::onnx::Model::load(path);
    FAIL() << "load() accepted BitShift direction='UP'";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'shift_up' (op BitShift, opset 17)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("direction='UP'"), std::string::npos) << msg;
  }
  fs::remove(path);
}

// inputs() and outputs() describe the graph's (non-initializer) values as the file declares them.
TEST(OnnxBackend, ValueInfo) {
  fs::path path = fs::path(KILN_ONNX_TESTDATA) / "node/test_abs/model.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << "libonnx-testdata is not installed";
  ::onnx::ModelProto proto;
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(proto.ParseFromIstream(&file));
  auto model = kiln::onnx::Model::load(path);
  ASSERT_EQ(model.inputs().size(), static_cast<size_t>(proto.graph().input_size()));
  for (size_t k = 0; k < model.inputs().size(); k++) {
    const auto& want = proto.graph().input(static_cast<int>(k));
    EXPECT_EQ(model.inputs()[k].name, want.name());
    EXPECT_EQ(model.inputs()[k].dtype, *kiln::onnx::dtype_from_onnx(want.type().tensor_type().elem_type()));
    ASSERT_EQ(model.inputs()[k].shape.size(), static_cast<size_t>(want.type().tensor_type().shape().dim_size()));
    for (size_t d = 0; d < model.inputs()[k].shape.size(); d++)
      EXPECT_EQ(model.inputs()[k].shape[d],
                std::to_string(want.type().tensor_type().shape().dim(static_cast<int>(d)).dim_value()));
  }
}

// A malformed initializer is an error at load naming what is wrong, never a crash, a huge allocation or
// a read outside the model's folder (cases the ONNX fuzzer, tests/fuzz/fuzz_onnx.cpp, looks for).
TEST(OnnxBackend, MalformedInitializersFailAtLoad) {
  auto load_with = [](const std::function<void(::onnx::TensorProto&)>& edit) -> std::string {
    ::onnx::ModelProto proto;
    proto.set_ir_version(8);
    proto.add_opset_import()->set_version(17);
    auto* init = proto.mutable_graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(::onnx::TensorProto::FLOAT);
    edit(*init);
    try {
      kiln::onnx::Model::load_bytes(proto.SerializeAsString(), fs::temp_directory_path());
    } catch (const Error& e) {
      return e.what();
    }
    return "loaded";
  };
  auto external = [](std::string location, std::string offset) {
    return [=](::onnx::TensorProto& t) {
      t.add_dims(2);
      t.set_data_location(::onnx::TensorProto::EXTERNAL);
      auto* kv = t.add_external_data();
      kv->set_key("location"), kv->set_value(location);
      kv = t.add_external_data();
      kv->set_key("offset"), kv->set_value(offset);
    };
  };
  std::string negative = load_with([](auto& t) { t.add_dims(3), t.add_dims(-1); });
  EXPECT_NE(negative.find("-1) is not a valid size"), std::string::npos) << negative;
  // 2^62 * 4 elements of 4 bytes wrap around to 0 bytes, which an empty tensor would match
  std::string overflow = load_with([](auto& t) { t.add_dims(int64_t{1} << 62), t.add_dims(4); });
  EXPECT_NE(overflow.find("is not a valid size"), std::string::npos) << overflow;
  for (const char* outside : {"../secret.bin", "/etc/passwd", "a/../../b"}) {
    std::string msg = load_with(external(outside, "0"));
    EXPECT_NE(msg.find("is not a relative path inside the model's folder"), std::string::npos) << msg;
  }
  for (const char* offset : {"abc", "-4", "12x"}) {
    std::string msg = load_with(external("w.bin", offset));
    EXPECT_NE(msg.find("external data offset '" + std::string(offset) + "' is not a byte count"), std::string::npos)
        << msg;
  }
}
