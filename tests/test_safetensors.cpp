// safetensors: bit-exact round trips in every dtype, the byte layout against hand-written files
// (so the reader and the writer are not only checked against each other), every way a file can be
// malformed, atomic writes, and a mutation fuzzer over valid files.
#include <gtest/gtest.h>

#include "temp_dir.h"
#include "error_message.h"
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/nn/layers.h"
#include "kiln/nn/state.h"
#include "kiln/tensor.h"
#include "tensor/tensor_impl.h"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using kiln::nn::state::safe_load;
using kiln::nn::state::safe_load_metadata;
using kiln::nn::state::safe_save;
using kiln::nn::state::safe_save_check;
using kiln::nn::state::StateDict;
namespace dtypes = kiln::dtypes;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// ---- helpers

Bytes raw_bytes(const Tensor& t) {
  Bytes bytes(static_cast<size_t>(t.nbytes()));
  kiln::tensor_to_bytes(t, bytes.data(), bytes.size());
  return bytes;
}

Tensor tensor_of(DType dtype, Shape shape, const Bytes& bytes) {
  return kiln::tensor_from_bytes(bytes.data(), bytes.size(), dtype, std::move(shape));
}

// Little-endian bytes of `values`, each `itemsize` bytes wide.
Bytes le_bytes(std::initializer_list<uint64_t> values, int itemsize) {
  Bytes out;
  for (uint64_t v : values)
    for (int i = 0; i < itemsize; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const Bytes& bytes) {
  // A fresh file rather than a truncated one: ext4 flushes a truncated-and-rewritten file to disk
  // on close, which would make the fuzz test crawl.
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file by hand: the length field, `header` as given (no padding), then `data`.
Bytes file_bytes(const std::string& header, const Bytes& data = {}, std::optional<uint64_t> length = {}) {
  Bytes out = le_bytes({length.value_or(header.size())}, 8);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

using kt::error_of;

// A fresh directory per test, removed afterwards.
class Safetensors : public ::testing::Test {
 protected:
  fs::path path(const std::string& name = "model.safetensors") const { return dir_ / name; }

  kt::TempDir temp_{"kiln_safetensors"};
  const fs::path& dir_ = temp_.dir;
};

// ---- round trips

// Bit patterns each float dtype must carry unchanged: NaNs with payloads and signs, -0.0,
// infinities, the smallest subnormal, ordinary values.
struct DtypeCase {
  DType dtype;
  Bytes bytes;
};

std::vector<DtypeCase> every_dtype_case() {
  return {
      {dtypes::float64, le_bytes({0x7ff8000000000001, 0xfff0000000abcdef, 0x8000000000000000,
                                  0x7ff0000000000000, 0x0000000000000001, 0x3ff8000000000000}, 8)},
      {dtypes::float32, le_bytes({0x7fc00001, 0xffc12345, 0x7f800001, 0x80000000, 0xff800000, 0x00000001,
                                  0x3fc00000}, 4)},
      {dtypes::float16, le_bytes({0x7e01, 0xfe00, 0x7c01, 0x8000, 0x7c00, 0x0001, 0x3c00, 0x7bff}, 2)},
      {dtypes::bfloat16, le_bytes({0x7fc1, 0xffc0, 0x7f81, 0x8000, 0xff80, 0x0001, 0x3f80, 0x7f7f}, 2)},
      {dtypes::int64, le_bytes({0x8000000000000000, 0xffffffffffffffff, 0, 1, 0x7fffffffffffffff}, 8)},
      {dtypes::int32, le_bytes({0x80000000, 0xffffffff, 0, 1, 0x7fffffff}, 4)},
      {dtypes::int16, le_bytes({0x8000, 0xffff, 0, 1, 0x7fff}, 2)},
      {dtypes::int8, le_bytes({0x80, 0xff, 0, 1, 0x7f}, 1)},
      {dtypes::uint64, le_bytes({0, 1, 0xffffffffffffffff, 0x0123456789abcdef}, 8)},
      {dtypes::uint32, le_bytes({0, 1, 0xffffffff, 0x89abcdef}, 4)},
      {dtypes::uint16, le_bytes({0, 1, 0xffff, 0xabcd}, 2)},
      {dtypes::uint8, le_bytes({0, 1, 0xff, 0xab}, 1)},
      {dtypes::bool_, le_bytes({1, 0, 0, 1, 1}, 1)},
      // NaN, -NaN, -0, smallest subnormal, 1.0, the largest finite (448 and 57344); e5m2 also ±inf
      {dtypes::fp8e4m3, le_bytes({0x7f, 0xff, 0x80, 0x01, 0x38, 0x7e}, 1)},
      {dtypes::fp8e5m2, le_bytes({0x7e, 0xff, 0x80, 0x01, 0x3c, 0x7b, 0x7c, 0xfc}, 1)},
  };
}

TEST_F(Safetensors, RoundTripsEveryDtypeBitExactly) {
  StateDict saved;
  for (const DtypeCase& c : every_dtype_case()) {
    int64_t n = static_cast<int64_t>(c.bytes.size()) / c.dtype.itemsize();
    saved.emplace(c.dtype.name(), tensor_of(c.dtype, {n}, c.bytes));
  }
  safe_save(saved, path());
  StateDict loaded = safe_load(path());
  ASSERT_EQ(loaded.size(), saved.size());
  for (const DtypeCase& c : every_dtype_case()) {
    SCOPED_TRACE(c.dtype.name());
    const Tensor& t = loaded.at(c.dtype.name());
    EXPECT_EQ(t.dtype(), c.dtype);
    EXPECT_EQ(t.shape(), saved.at(c.dtype.name()).shape());
    EXPECT_EQ(raw_bytes(t), c.bytes);
  }
}

TEST_F(Safetensors, RoundTripsScalarsZeroSizeAndManyDimensions) {
  StateDict saved{
      {"scalar", Tensor::from_vector<float>({-2.5f}, {})},
      {"empty", Tensor::zeros({0}, dtypes::float16)},
      {"empty_inner", Tensor::zeros({3, 0, 2}, dtypes::int64)},
      {"one", Tensor::from_vector<int8_t>({-7}, {1})},
      {"cube", Tensor::arange(0, 24).reshape({2, 3, 4})},
      {"ones_dims", Tensor::from_vector<uint8_t>({9, 8}, {1, 1, 2, 1, 1})},
  };
  safe_save(saved, path());
  StateDict loaded = safe_load(path());
  ASSERT_EQ(loaded.size(), saved.size());
  for (const auto& [name, t] : saved) {
    SCOPED_TRACE(name);
    EXPECT_EQ(loaded.at(name).shape(), t.shape());
    EXPECT_EQ(loaded.at(name).dtype(), t.dtype());
    EXPECT_EQ(raw_bytes(loaded.at(name)), raw_bytes(t));
  }
  EXPECT_EQ(loaded.at("scalar").item<float>(), -2.5f);
}

TEST_F(Safetensors, SavesViewsAndLazyResultsAsTheirRowMajorValues) {
  Tensor m = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  safe_save({{"t", m.transpose()}, {"lazy", m * 10 + 1}, {"slice", m.shrink({{1, 2}, {0, 2}})}}, path());
  StateDict loaded = safe_load(path());
  EXPECT_EQ(loaded.at("t").shape(), (Shape{3, 2}));
  EXPECT_EQ(loaded.at("t").to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(loaded.at("lazy").to_vector<int32_t>(), (std::vector<int32_t>{1, 11, 21, 31, 41, 51}));
  EXPECT_EQ(loaded.at("slice").to_vector<int32_t>(), (std::vector<int32_t>{3, 4}));
}

TEST_F(Safetensors, LoadedTensorsComputeLikeAnyOther) {
  safe_save({{"w", Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})}}, path());
  Tensor w = safe_load(path()).at("w");
  EXPECT_EQ(w.matmul(w).to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
}

TEST_F(Safetensors, MetadataRoundTrips) {
  std::map<std::string, std::string> metadata{
      {"format", "pt"}, {"empty", ""}, {"unicode", "ünï\xe2\x82\xac"}, {"quotes", "a \"b\" \\ c\n"}};
  safe_save({{"x", Tensor::ones({2})}}, path(), metadata);
  EXPECT_EQ(safe_load_metadata(path()), metadata);
  EXPECT_EQ(safe_load(path()).size(), 1u);
  safe_save({{"x", Tensor::ones({2})}}, path("plain.safetensors"));
  EXPECT_TRUE(safe_load_metadata(path("plain.safetensors")).empty());
}

TEST_F(Safetensors, EmptyStateDictRoundTrips) {
  safe_save({}, path());
  EXPECT_TRUE(safe_load(path()).empty());
}

// ---- the byte layout, against hand-written files

TEST_F(Safetensors, WriterProducesTheReferenceLayout) {
  safe_save({{"b", Tensor::from_vector<int16_t>({1, -2}, {2, 1})}, {"a", Tensor::from_vector<float>({1.0f}, {})}},
            path(), {{"k", "v"}});
  std::string json =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"I16","shape":[2,1],"data_offsets":[4,8]}})";
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  Bytes data = {0x00, 0x00, 0x80, 0x3f, 0x01, 0x00, 0xfe, 0xff};  // 1.0f, then 1 and -2 as int16
  Bytes expected = file_bytes(padded, data);
  Bytes written = read_file(path());
  EXPECT_EQ(written.size(), expected.size());
  EXPECT_EQ(std::string(written.begin() + 8, written.end() - 8), padded);
  EXPECT_EQ(written, expected);
  EXPECT_EQ((written.size() - 8 - data.size()) % 8, 0u) << "the header is padded to a multiple of 8";
}

TEST_F(Safetensors, ReadsAHandBuiltFileFieldByField) {
  // Keys out of name order, data out of name order, spaces around and after the JSON, no metadata.
  std::string header =
      R"( { "z" : {"data_offsets":[0,2],"shape":[2],"dtype":"U8"},
            "a" : {"shape":[],"dtype":"F64","data_offsets":[2,10]},
            "m" : {"dtype":"BF16","shape":[1,2],"data_offsets":[10,14]},
            "e" : {"dtype":"I32","shape":[0,4],"data_offsets":[14,14]},
            "__metadata__": {"source": "hand"} }    )";
  Bytes data = {7, 250};
  for (uint8_t b : le_bytes({0xc004000000000000}, 8)) data.push_back(b);  // -2.5
  for (uint8_t b : le_bytes({0x3f80, 0xc040}, 2)) data.push_back(b);      // bf16 1.0, -3.0
  write_file(path(), file_bytes(header, data));

  StateDict loaded = safe_load(path());
  ASSERT_EQ(loaded.size(), 4u);
  EXPECT_EQ(loaded.at("z").dtype(), dtypes::uint8);
  EXPECT_EQ(loaded.at("z").shape(), (Shape{2}));
  EXPECT_EQ(loaded.at("z").to_vector<uint8_t>(), (std::vector<uint8_t>{7, 250}));
  EXPECT_EQ(loaded.at("a").dtype(), dtypes::float64);
  EXPECT_EQ(loaded.at("a").shape(), Shape{});
  EXPECT_EQ(loaded.at("a").item<double>(), -2.5);
  EXPECT_EQ(loaded.at("m").dtype(), dtypes::bfloat16);
  EXPECT_EQ(loaded.at("m").shape(), (Shape{1, 2}));
  EXPECT_EQ(loaded.at("m").cast(dtypes::float32).to_vector<float>(), (std::vector<float>{1.0f, -3.0f}));
  EXPECT_EQ(loaded.at("e").dtype(), dtypes::int32);
  EXPECT_EQ(loaded.at("e").shape(), (Shape{0, 4}));
  EXPECT_EQ(safe_load_metadata(path()), (std::map<std::string, std::string>{{"source", "hand"}}));
}

// safetensors' names for the fp8 types, both ways: a hand-built file's bytes decode by the formats'
// definitions (e4m3: bias 7; e5m2: bias 15), and kiln writes the same names and bytes back.
TEST_F(Safetensors, Fp8TensorsUseTheFormatsDtypeNames) {
  std::string header = R"({"a":{"dtype":"F8_E4M3","shape":[3],"data_offsets":[0,3]},)"
                       R"("b":{"dtype":"F8_E5M2","shape":[3],"data_offsets":[3,6]}})";
  // e4m3: 1.0, -3.0 (1.5 * 2^1), 2^-9 (subnormal); e5m2: 1.0, -3.0, 2^-16 (subnormal)
  Bytes data = {0x38, 0xc4, 0x01, 0x3c, 0xc2, 0x01};
  write_file(path(), file_bytes(header, data));
  StateDict loaded = safe_load(path());
  EXPECT_EQ(loaded.at("a").dtype(), dtypes::fp8e4m3);
  EXPECT_EQ(loaded.at("b").dtype(), dtypes::fp8e5m2);
  EXPECT_EQ(loaded.at("a").cast(dtypes::float32).to_vector<float>(),
            (std::vector<float>{1.0f, -3.0f, std::ldexp(1.0f, -9)}));
  EXPECT_EQ(loaded.at("b").cast(dtypes::float32).to_vector<float>(),
            (std::vector<float>{1.0f, -3.0f, std::ldexp(1.0f, -16)}));
  safe_save(loaded, path("again.safetensors"));
  Bytes written = read_file(path("again.safetensors"));
  const std::string text(written.begin(), written.end());
  EXPECT_NE(text.find(R"("a":{"dtype":"F8_E4M3","shape":[3],"data_offsets":[0,3]})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("b":{"dtype":"F8_E5M2","shape":[3],"data_offsets":[3,6]})"), std::string::npos) << text;
  EXPECT_EQ(Bytes(written.end() - 6, written.end()), data);
}

// ---- writing: atomic, with errors naming the path

TEST_F(Safetensors, SavingReplacesTheFileAndLeavesNoTemporaries) {
  safe_save({{"old", Tensor::ones({3})}}, path());
  safe_save({{"new", Tensor::zeros({2})}}, path());
  StateDict loaded = safe_load(path());
  EXPECT_EQ(loaded.count("old"), 0u);
  EXPECT_EQ(loaded.at("new").to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(Safetensors, SavingIntoAMissingDirectoryNamesThePath) {
  std::string target = (dir_ / "no_such_dir" / "m.safetensors").string();
  std::string msg = error_of([&] { safe_save({{"x", Tensor::ones({1})}}, target); });
  EXPECT_NE(msg.find("safe_save: " + target), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot create"), std::string::npos) << msg;
}

TEST_F(Safetensors, AFailedWriteKeepsTheOldFileAndRemovesTheTemporary) {
  safe_save({{"old", Tensor::ones({3})}}, path());
  Bytes before = read_file(path());
  // A file size limit makes write() fail with EFBIG part way, as a full disk would with ENOSPC.
  rlimit saved{};
  getrlimit(RLIMIT_FSIZE, &saved);
  rlimit small = saved;
  small.rlim_cur = 4096;
  auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Tensor big = Tensor::from_vector<float>(std::vector<float>(100000), {100000});  // no kernel to compile
  std::string msg = error_of([&] { safe_save({{"big", big}}, path().string()); });
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(msg.find("safe_save: " + path().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot write"), std::string::npos) << msg;
  EXPECT_EQ(read_file(path()), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(Safetensors, SavingThroughSymbolicLinksReplacesTheTargetAndKeepsTheLinks) {
  fs::create_directory(dir_ / "real");
  safe_save({{"old", Tensor::ones({1})}}, path("real/model.safetensors"));
  // A chain: an absolute link to a relative link to the file.
  fs::create_symlink("real/model.safetensors", path("relative_link"));
  fs::create_symlink(path("relative_link"), path("absolute_link"));
  safe_save({{"new", Tensor::from_vector<float>({7}, {1})}}, path("absolute_link"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("absolute_link"))));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("relative_link"))));
  StateDict loaded = safe_load(path("real/model.safetensors"));
  EXPECT_EQ(loaded.count("old"), 0u);
  EXPECT_EQ(loaded.at("new").to_vector<float>(), std::vector<float>{7});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "real"), fs::directory_iterator()), 1) << "a temporary is left";
  // A link to a file that does not exist yet creates the file.
  fs::create_symlink("fresh.safetensors", path("dangling_link"));
  safe_save({{"x", Tensor::ones({2})}}, path("dangling_link"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("dangling_link"))));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path("fresh.safetensors"))));
}

TEST_F(Safetensors, SavingOverADirectoryFifoOrDeviceIsAnErrorThatLeavesItAlone) {
  fs::create_directory(path("a_directory"));
  ASSERT_EQ(mkfifo(path("a_fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/null", path("link_to_a_device"));  // the link, not /dev/null, is what a bug would replace
  const std::pair<std::string, std::string> cases[] = {
      {"a_directory", "it is a directory"},
      {"a_fifo", "it is a FIFO"},
      {"link_to_a_device", "its links lead to /dev/null, a character device"}};
  for (const auto& [name, phrase] : cases) {
    for (bool check_only : {false, true}) {
      std::string msg = error_of([&] {
        if (check_only) safe_save_check(path(name));
        else safe_save({{"x", Tensor::ones({1})}}, path(name));
      });
      EXPECT_NE(msg.find("safe_save: " + path(name).string() + ": "), std::string::npos) << msg;
      EXPECT_NE(msg.find(phrase), std::string::npos) << msg;
      EXPECT_NE(msg.find("expected a regular file"), std::string::npos) << msg;
    }
  }
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(path("a_directory"))));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(path("a_fifo"))));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("link_to_a_device"))));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 3) << "a temporary is left";
}

TEST_F(Safetensors, SaveCheckFindsBadPathsWithoutWriting) {
  safe_save_check(path());  // a new file: fine, and nothing is created
  safe_save({{"x", Tensor::ones({1})}}, path());
  Bytes before = read_file(path());
  safe_save_check(path());  // an existing file: fine, and it is unchanged
  EXPECT_EQ(read_file(path()), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  std::string missing = error_of([&] { safe_save_check(path("no_such_dir/m.safetensors")); });
  EXPECT_NE(missing.find("cannot create"), std::string::npos) << missing;
  std::string file_as_parent = error_of([&] { safe_save_check(path("model.safetensors/m.safetensors")); });
  EXPECT_NE(file_as_parent.find("Not a directory"), std::string::npos) << file_as_parent;
}

TEST_F(Safetensors, SaveRejectsNamesAndMetadataTheFormatCannotHold) {
  std::string reserved = error_of([&] { safe_save({{"__metadata__", Tensor::ones({1})}}, path()); });
  EXPECT_NE(reserved.find("cannot be named \"__metadata__\""), std::string::npos) << reserved;
  std::string bad_name = error_of([&] { safe_save({{"bad\xff", Tensor::ones({1})}}, path()); });
  EXPECT_NE(bad_name.find("UTF-8"), std::string::npos) << bad_name;
  std::string bad_meta = error_of([&] { safe_save({}, path(), {{"k", "\xc3"}}); });
  EXPECT_NE(bad_meta.find("UTF-8"), std::string::npos) << bad_meta;
  EXPECT_FALSE(fs::exists(path()));
}

// ---- malformed files: each is a kiln::Error naming the file and the problem

struct MalformedCase {
  std::string name;
  Bytes file;
  std::string phrase;  // the message must contain it
};

// One float32 tensor "a" of shape [2] at [0, 8), inside an otherwise valid file.
Bytes with_entry(const std::string& entry, size_t data_bytes = 8) {
  return file_bytes(R"({"a":)" + entry + "}", Bytes(data_bytes, 0));
}

std::vector<MalformedCase> malformed_cases() {
  const std::string a_ok = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  std::string deep = std::string(100, '[') + std::string(100, ']');
  return {
      {"EmptyFile", {}, "too few for the 8-byte header length"},
      {"ShorterThanTheLength", {1, 0, 0}, "too few"},
      {"HeaderLengthPastTheFile", file_bytes("{}", {}, 100), "only 2 follow it"},
      {"HeaderLengthAbsurd", file_bytes("{}", {}, uint64_t{1} << 62), "at most 100000000"},
      {"HeaderLengthZero", file_bytes("", {}), "not valid JSON"},
      {"InvalidJson", file_bytes(R"({"a": {"dtype": )"), "not valid JSON"},
      {"InvalidUtf8InJson", file_bytes("{\"\xff\": 1}"), "not valid JSON"},
      {"TrailingGarbage", file_bytes("{} x"), "not valid JSON"},
      {"HeaderNotAnObject", file_bytes("[1, 2]"), "must be a JSON object, got array"},
      {"EntryNotAnObject", file_bytes(R"({"a": 5})"), "expected an object with dtype, shape and data_offsets"},
      {"MissingDtype", with_entry(R"({"shape":[2],"data_offsets":[0,8]})"), "has no \"dtype\""},
      {"MissingShape", with_entry(R"({"dtype":"F32","data_offsets":[0,8]})"), "has no \"shape\""},
      {"MissingOffsets", with_entry(R"({"dtype":"F32","shape":[2]})"), "has no \"data_offsets\""},
      {"DtypeNotAString", with_entry(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"),
       "\"dtype\" must be a string, got number 4"},
      {"UnknownDtype", with_entry(R"({"dtype":"C64","shape":[2],"data_offsets":[0,8]})"),
       "unknown dtype \"C64\" (expected one of F64"},
      {"LowercaseDtype", with_entry(R"({"dtype":"f32","shape":[2],"data_offsets":[0,8]})"), "unknown dtype"},
      {"ShapeNotAnArray", with_entry(R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})"),
       "\"shape\" must be an array, got string"},
      {"NegativeDimension", with_entry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"),
       "dimension of \"shape\" must be a non-negative integer, got number -2"},
      {"FractionalDimension", with_entry(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"),
       "must be a non-negative integer, got number 2.5"},
      {"DimensionAsString", with_entry(R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})"),
       "must be a non-negative integer, got string"},
      {"NestedShape", with_entry(R"({"dtype":"F32","shape":[[2]],"data_offsets":[0,8]})"),
       "must be a non-negative integer, got array"},
      {"DimensionBeyondTheLimit", with_entry(R"({"dtype":"F32","shape":[4294967296,0],"data_offsets":[0,0]})", 0),
       "has a dimension of 4294967296"},
      {"ShapeProductBeyondTheLimit", with_entry(R"({"dtype":"U8","shape":[65536,65536],"data_offsets":[0,8]})"),
       "more than 2147483647 elements"},
      {"ShapeProductOverflows",
       with_entry(R"({"dtype":"U8","shape":[2147483647,2147483647,2147483647,5],"data_offsets":[0,8]})"),
       "more than 2147483647 elements"},
      {"ShapeProductWrapsToZero",
       with_entry(R"({"dtype":"U8","shape":[1073741824,1073741824,1073741824],"data_offsets":[0,0]})", 0),
       "more than 2147483647 elements"},
      {"OffsetsNotAPair", with_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"),
       "\"data_offsets\" must be [begin, end], got array [0]"},
      {"OffsetsNotAnArray", with_entry(R"({"dtype":"F32","shape":[2],"data_offsets":{"0":8}})"),
       "must be [begin, end], got object"},
      {"NegativeOffset", with_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"),
       "the begin of \"data_offsets\" must be a non-negative integer, got number -8"},
      {"FractionalOffset", with_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8.0]})"),
       "the end of \"data_offsets\" must be a non-negative integer, got number 8.0"},
      {"OffsetBeyondUint64", with_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]})"),
       "must be a non-negative integer"},
      {"EndBeforeBegin", with_entry(R"({"dtype":"F32","shape":[0],"data_offsets":[8,4]})"),
       "data_offsets [8,4] end before they begin"},
      {"OffsetsPastTheData", with_entry(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"),
       "run past the data region, which has 8 bytes"},
      {"SizeMismatch", with_entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"),
       "F32 shape [3] needs 12 bytes, but data_offsets [0,8] span 8"},
      {"OverlappingRanges",
       file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                  Bytes(12, 0)),
       "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" at [0, 8]"},
      {"SameRangeTwice",
       file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                  Bytes(4, 0)),
       "overlap"},
      {"GapBetweenTensors",
       file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                  Bytes(12, 0)),
       "bytes [4, 8) of the data region belong to no tensor"},
      {"TrailingData", file_bytes("{" + a_ok + "}", Bytes(8, 0)),
       "the data region has 8 bytes but the tensors cover only the first 4"},
      {"DuplicateTensor", file_bytes("{" + a_ok + "," + a_ok + "}", Bytes(4, 0)), "key \"a\" twice"},
      {"DuplicateField", with_entry(R"({"dtype":"F32","shape":[2],"dtype":"I32","data_offsets":[0,8]})"),
       "key \"dtype\" twice"},
      {"DuplicateMetadataKey", file_bytes(R"({"__metadata__":{"k":"1","k":"2"}})"), "key \"k\" twice"},
      {"MetadataNotAnObject", file_bytes(R"({"__metadata__":["k"]})"),
       "\"__metadata__\" must be an object of strings, got array"},
      {"MetadataValueNotAString", file_bytes(R"({"__metadata__":{"k":1}})"),
       "\"__metadata__\" value for \"k\" must be a string, got number 1"},
      {"DeepNesting", file_bytes(R"({"__metadata__":)" + deep + "}"), "nests deeper than 8 levels"},
  };
}

class MalformedFile : public Safetensors, public ::testing::WithParamInterface<MalformedCase> {};

TEST_P(MalformedFile, IsAKilnErrorSayingWhatIsWrong) {
  write_file(path(), GetParam().file);
  std::string msg = error_of([&] { safe_load(path()); });
  EXPECT_NE(msg.find(GetParam().phrase), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("safe_load: " + path().string() + ": ", 0), 0u) << msg;
  std::string metadata_msg = error_of([&] { safe_load_metadata(path()); });
  EXPECT_NE(metadata_msg.find(GetParam().phrase), std::string::npos) << metadata_msg;
}

// gtest would print the whole byte vector as the parameter; the name says it all.
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

INSTANTIATE_TEST_SUITE_P(Cases, MalformedFile, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& info) { return info.param.name; });

TEST_F(Safetensors, BoolBytesOtherThanZeroOrOneAreErrors) {
  write_file(path(), file_bytes(R"({"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", Bytes{1, 0, 2}));
  std::string msg = error_of([&] { safe_load(path()); });
  EXPECT_NE(msg.find("BOOL tensor \"a\" has byte 2 at element 2; expected 0 or 1"), std::string::npos) << msg;
  EXPECT_TRUE(safe_load_metadata(path()).empty()) << "reading metadata does not look at tensor data";
}

TEST_F(Safetensors, MissingFilesAndDirectoriesAreErrors) {
  std::string missing = error_of([&] { safe_load(path("absent.safetensors")); });
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
  EXPECT_NE(missing.find("absent.safetensors"), std::string::npos) << missing;
  std::string directory = error_of([&] { safe_load(dir_.string()); });
  EXPECT_NE(directory.find("to be a regular file"), std::string::npos) << directory;
}

// A header with many tensors (each one U8 element, tensor i holding i % 251): parsing it must stay
// linear in the number of entries, as a hostile file can hold millions.
TEST_F(Safetensors, LoadsAHeaderWithFiftyThousandTensors) {
  constexpr int kTensors = 50000;
  std::string header = "{";
  Bytes data;
  for (int i = 0; i < kTensors; ++i) {
    header += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"U8","shape":[1],"data_offsets":[)" +
              std::to_string(i) + "," + std::to_string(i + 1) + "]}";
    data.push_back(static_cast<uint8_t>(i % 251));
  }
  write_file(path(), file_bytes(header + "}", data));
  StateDict loaded = safe_load(path());
  ASSERT_EQ(loaded.size(), size_t{kTensors});
  for (int i = 0; i < kTensors; i += 997)
    EXPECT_EQ(raw_bytes(loaded.at("t" + std::to_string(i))), Bytes{static_cast<uint8_t>(i % 251)}) << i;

  // The same key twice, far apart, is still found.
  write_file(path(), file_bytes(header + R"(,"t0":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})", data));
  std::string msg = error_of([&] { safe_load(path()); });
  EXPECT_NE(msg.find("key \"t0\" twice"), std::string::npos) << msg;
}

// ---- load_state_dict: a file's dtype must match the model's unless casting is asked for

TEST_F(Safetensors, LoadStateDictRefusesAnotherDtypeUnlessAskedToCast) {
  kiln::nn::Linear model(2, 1);
  // Values float16 holds exactly, so the cast is exact and the expected floats are known.
  safe_save({{"weight", Tensor::from_vector<float>({0.5f, -2.0f}, {1, 2}).cast(dtypes::float16)},
             {"bias", Tensor::from_vector<float>({1024.0f}, {1})}},
            path());
  std::string msg = error_of([&] { kiln::nn::load_state_dict(model, safe_load(path())); });
  EXPECT_NE(msg.find("keys of another dtype: weight (model float32, given float16)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("bias"), std::string::npos) << "bias has the model's dtype: " << msg;
  kiln::nn::load_state_dict(model, safe_load(path()), /*strict=*/true, /*cast=*/true);
  EXPECT_EQ(model.weight.dtype(), dtypes::float32);
  EXPECT_EQ(model.weight.to_vector<float>(), (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(model.bias->to_vector<float>(), std::vector<float>{1024.0f});
}

// ---- fuzzing: mutated valid files either load or throw kiln::Error, nothing else

// Numbers and tokens a JSON edit swaps in: boundaries, wrong types, broken syntax.
const std::vector<std::string> kReplacementTokens = {
    "-1", "0", "1", "2.5", "1e30", "-0", "4294967296", "2147483648", "18446744073709551615",
    "18446744073709551616", "\"F16\"", "\"BOOL\"", "\"X\"", "null", "true", "[]", "{}", "[0,0]",
    "\"__metadata__\"", "\"a\"", ",", ":", "{", "}", "[", "]", "\"", ""};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  Bytes mutate(Bytes file) {
    switch (pick(6)) {
      case 0:  // flip bits in a few random bytes
        for (size_t i = 0, n = 1 + pick(4); i < n && !file.empty(); ++i) file[pick(file.size())] ^= 1 << pick(8);
        break;
      case 1:  // flip bits in the data region only, which mostly leaves a valid file
        if (size_t data_begin = data_offset(file); data_begin < file.size())
          file[data_begin + pick(file.size() - data_begin)] ^= 1 << pick(8);
        break;
      case 2:  // truncate
        file.resize(pick(file.size() + 1));
        break;
      case 3:  // a different header length: nearby, or anything
        if (file.size() >= 8) {
          uint64_t length = 0;
          std::memcpy(&length, file.data(), 8);
          length = pick(2) ? length + pick(17) - 8 : rng_();
          std::memcpy(file.data(), &length, 8);
        }
        break;
      default:  // edit the JSON: replace a span of the header with another token
        edit_header(file);
        break;
    }
    return file;
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  static size_t data_offset(const Bytes& file) {
    if (file.size() < 8) return file.size();
    uint64_t length = 0;
    std::memcpy(&length, file.data(), 8);
    return length > file.size() - 8 ? file.size() : 8 + static_cast<size_t>(length);
  }

  void edit_header(Bytes& file) {
    if (file.size() < 8) return;
    uint64_t length = 0;
    std::memcpy(&length, file.data(), 8);
    size_t header_end = 8 + static_cast<size_t>(std::min<uint64_t>(length, file.size() - 8));
    size_t begin = 8 + pick(header_end - 8);
    size_t end = std::min(header_end, begin + pick(6));
    const std::string& token = kReplacementTokens[pick(kReplacementTokens.size())];
    file.erase(file.begin() + begin, file.begin() + end);
    file.insert(file.begin() + begin, token.begin(), token.end());
    if (pick(4) != 0) {  // usually keep the length field honest, so the JSON itself is exercised
      uint64_t new_length = length - (end - begin) + token.size();
      std::memcpy(file.data(), &new_length, 8);
    }
  }

  std::mt19937_64 rng_;
};

TEST_F(Safetensors, MutatedFilesLoadOrThrowKilnError) {
  std::vector<Bytes> seeds;
  safe_save({{"a", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
             {"b", Tensor::from_vector<bool>({true, false}, {2})},
             {"c", Tensor::from_vector<int64_t>({-1}, {})},
             {"d", Tensor::zeros({0, 3}, dtypes::bfloat16)}},
            path(), {{"format", "pt"}});
  seeds.push_back(read_file(path()));
  safe_save({{"w", Tensor::from_vector<uint8_t>({1, 2, 3}, {3})}}, path());
  seeds.push_back(read_file(path()));
  seeds.push_back(file_bytes(R"({"x":{"dtype":"F16","shape":[2,1],"data_offsets":[0,4]}})", Bytes{0, 60, 0, 188}));

  Mutator mutator(20240521);
  int loaded = 0, rejected = 0;
  const int iterations = kt::fuzz_iterations(3000);
  for (int i = 0; i < iterations; ++i) {
    Bytes file = seeds[static_cast<size_t>(i) % seeds.size()];
    for (int rounds = i % 4 == 0 ? 3 : 1; rounds > 0; --rounds) file = mutator.mutate(std::move(file));
    write_file(path("fuzz.safetensors"), file);
    try {
      for (const auto& [name, t] : safe_load(path("fuzz.safetensors"))) raw_bytes(t);
      ++loaded;
    } catch (const kiln::Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "mutation " << i << " threw a non-kiln exception: " << e.what();
    }
  }
  // Both outcomes must be common, or the mutations are too weak or too destructive to test much.
  EXPECT_GT(loaded, 100);
  EXPECT_GT(rejected, 1000);
}

}  // namespace
