// Datasets: idx files the tests write themselves (plain and gzip, every dtype, several shapes) load
// with the values written; every malformed file throws kiln::Error saying what is wrong; randomly
// damaged files load or throw kiln::Error, never crash; Fashion-MNIST loads from a directory, and
// the real one (Debian's dataset-fashion-mnist, when installed) has the right shapes and classes.
#include <gtest/gtest.h>

#include "error_message.h"
#include <stdlib.h>
#include <zlib.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/error.h"
#include "kiln/nn/datasets.h"
#include "kiln/tensor.h"
#include "support/env.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace datasets = kiln::nn::datasets;
namespace dtypes = kiln::dtypes;
using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using Bytes = std::vector<uint8_t>;

using kt::TempDir;

// ---- writing idx files

// The unsigned integer with T's bits, so floats and negative numbers are written bit for bit.
template <class T>
using Bits = std::conditional_t<sizeof(T) == 1, uint8_t,
                                std::conditional_t<sizeof(T) == 2, uint16_t,
                                                   std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

void append_big_endian(Bytes& out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

Bytes idx_header(uint8_t type, const std::vector<uint32_t>& sizes) {
  Bytes out = {0, 0, type, static_cast<uint8_t>(sizes.size())};
  for (uint32_t size : sizes) append_big_endian(out, size, 4);
  return out;
}

template <class T>
Bytes idx_file(uint8_t type, const std::vector<uint32_t>& sizes, const std::vector<T>& values) {
  Bytes out = idx_header(type, sizes);
  for (T v : values) append_big_endian(out, std::bit_cast<Bits<T>>(v), sizeof(T));
  return out;
}

void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_gzip(const std::string& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (!file) throw std::runtime_error("cannot gzopen " + path);
  bool ok = bytes.empty() || gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) > 0;
  if (gzclose(file) != Z_OK || !ok) throw std::runtime_error("cannot gzwrite " + path);
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes gzip_bytes(const TempDir& dir, const Bytes& bytes) {
  write_gzip(dir / "scratch.gz", bytes);
  return read_bytes(dir / "scratch.gz");
}

using kt::error_of;

std::string load_error(const std::string& path) {
  return error_of([&] { datasets::load_idx(path); });
}

// ---- load_idx: values

// Writes `values` as an idx file four ways, plain and gzip under names that say nothing or the
// wrong thing (the content decides), and checks each loads bit for bit.
template <class T>
void expect_loads(uint8_t type, DType dtype, const std::vector<uint32_t>& sizes, const std::vector<T>& values) {
  TempDir dir;
  Bytes file = idx_file(type, sizes, values);
  write_plain(dir / "plain", file);
  write_plain(dir / "plain-named.gz", file);
  write_gzip(dir / "gzip", file);
  write_gzip(dir / "gzip.gz", file);
  for (const char* name : {"plain", "plain-named.gz", "gzip", "gzip.gz"}) {
    SCOPED_TRACE(std::string(name) + " " + dtype.name());
    Tensor t = datasets::load_idx(dir / name);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.shape(), Shape(sizes.begin(), sizes.end()));
    std::vector<T> got = t.to_vector<T>();
    ASSERT_EQ(got.size(), values.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(std::bit_cast<Bits<T>>(got[i]), std::bit_cast<Bits<T>>(values[i])) << "element " << i;
  }
}

// `n` values of T whose bytes all differ, so a wrong byte order shows.
template <class T>
std::vector<T> varied(size_t n) {
  std::vector<T> out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<T>(static_cast<Bits<T>>(0x9E3779B97F4A7C15ull * (i + 1))));
  return out;
}

TEST(LoadIdx, Uint8) { expect_loads<uint8_t>(0x08, dtypes::uint8, {2, 3}, {0, 1, 127, 128, 254, 255}); }

TEST(LoadIdx, Int8) {
  expect_loads<int8_t>(0x09, dtypes::int8, {3, 2, 2}, {-128, -1, 0, 1, 127, 42, -42, 7, -7, 100, -100, 3});
}

TEST(LoadIdx, Int16) {
  std::vector<int16_t> values = varied<int16_t>(12);
  values[0] = std::numeric_limits<int16_t>::min();
  values[1] = std::numeric_limits<int16_t>::max();
  values[2] = -1;
  expect_loads<int16_t>(0x0B, dtypes::int16, {2, 2, 3}, values);
}

TEST(LoadIdx, Int32) {
  std::vector<int32_t> values = varied<int32_t>(24);
  values[0] = std::numeric_limits<int32_t>::min();
  values[1] = std::numeric_limits<int32_t>::max();
  values[2] = -1;
  expect_loads<int32_t>(0x0C, dtypes::int32, {4, 1, 2, 3}, values);
}

TEST(LoadIdx, Float32) {
  float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  expect_loads<float>(0x0D, dtypes::float32, {1, 8}, {0.0f, -0.0f, 1.5f, -3.25e-38f, inf, -inf, nan, 1e-45f});
}

TEST(LoadIdx, Float64) {
  double inf = std::numeric_limits<double>::infinity();
  expect_loads<double>(0x0E, dtypes::float64, {2, 3}, {M_PI, -M_E, 1e-300, -inf, 5e-324, 0.1});
}

TEST(LoadIdx, DataLargerThanOneReadPiece) {
  expect_loads<int16_t>(0x0B, dtypes::int16, {1024, 1024}, varied<int16_t>(1024 * 1024));
}

TEST(LoadIdx, ZeroSizedDimensionGivesAnEmptyTensor) {
  TempDir dir;
  write_plain(dir / "empty", idx_header(0x0C, {0, 3}));
  Tensor t = datasets::load_idx(dir / "empty");
  EXPECT_EQ(t.shape(), (Shape{0, 3}));
  EXPECT_EQ(t.dtype(), dtypes::int32);
}

// ---- load_idx: malformed files, one expectation each

TEST(LoadIdxErrors, MissingFile) {
  TempDir dir;
  std::string msg = load_error(dir / "nothing-here");
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nothing-here"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, Directory) {
  TempDir dir;
  std::string msg = load_error(dir.dir.string());
  EXPECT_NE(msg.find("found a directory"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, EmptyFile) {
  TempDir dir;
  write_plain(dir / "empty", {});
  std::string msg = load_error(dir / "empty");
  EXPECT_NE(msg.find("too short for an idx header"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 0"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, BadMagic) {
  TempDir dir;
  write_plain(dir / "png", {0x89, 'P', 'N', 'G', 0, 0, 0, 1, 0});
  std::string msg = load_error(dir / "png");
  EXPECT_NE(msg.find("bad magic"), std::string::npos) << msg;
  EXPECT_NE(msg.find("89 50 4e 47"), std::string::npos) << msg;
  EXPECT_NE(msg.find("png"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, BadMagicInsideGzip) {
  TempDir dir;
  write_gzip(dir / "text.gz", {'h', 'e', 'l', 'l', 'o'});
  std::string msg = load_error(dir / "text.gz");
  EXPECT_NE(msg.find("bad magic"), std::string::npos) << msg;
  EXPECT_NE(msg.find("68 65 6c 6c"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, UnknownTypeByte) {
  TempDir dir;
  write_plain(dir / "f16", idx_file<uint16_t>(0x0A, {1}, {0x3C00}));
  std::string msg = load_error(dir / "f16");
  EXPECT_NE(msg.find("unknown type byte 0a"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, ZeroDimensions) {
  TempDir dir;
  write_plain(dir / "scalar", {0, 0, 0x08, 0, 42});
  std::string msg = load_error(dir / "scalar");
  EXPECT_NE(msg.find("zero dimensions"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, TooManyDimensions) {
  TempDir dir;
  write_plain(dir / "deep", idx_file<uint8_t>(0x08, std::vector<uint32_t>(17, 1), {7}));
  std::string msg = load_error(dir / "deep");
  EXPECT_NE(msg.find("17 dimensions"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, TruncatedHeader) {
  TempDir dir;
  Bytes file = idx_header(0x08, {2, 3, 4});
  file.resize(file.size() - 2);
  write_plain(dir / "cut", file);
  std::string msg = load_error(dir / "cut");
  EXPECT_NE(msg.find("truncated header"), std::string::npos) << msg;
  EXPECT_NE(msg.find("need 12 bytes of sizes, found 10"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, SizesWhoseProductOverflows) {
  TempDir dir;
  write_plain(dir / "huge", idx_header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}));
  std::string msg = load_error(dir / "huge");
  EXPECT_NE(msg.find("more than kiln's limit of 2147483647 elements"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, SizesBeyondTheElementLimit) {
  TempDir dir;
  write_plain(dir / "big", idx_header(0x08, {65536, 32768}));  // 2^31 elements, one too many
  std::string msg = load_error(dir / "big");
  EXPECT_NE(msg.find("(65536, 32768)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("more than kiln's limit"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, TruncatedData) {
  TempDir dir;
  Bytes file = idx_file<int32_t>(0x0C, {2, 3}, varied<int32_t>(6));
  file.pop_back();
  write_plain(dir / "cut", file);
  write_gzip(dir / "cut.gz", file);
  for (const char* name : {"cut", "cut.gz"}) {
    std::string msg = load_error(dir / name);
    EXPECT_NE(msg.find("truncated data"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2, 3) of int32 needs 24 bytes, found 23"), std::string::npos) << msg;
  }
}

// The header is not trusted with memory: a claim of 2 GB backed by 10 bytes fails without taking 2 GB.
TEST(LoadIdxErrors, HugeHeaderOverTinyData) {
  TempDir dir;
  Bytes file = idx_header(0x08, {0x7FFFFFFF});
  file.insert(file.end(), 10, 1);
  write_plain(dir / "liar", file);
  std::string msg = load_error(dir / "liar");
  EXPECT_NE(msg.find("truncated data"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 10"), std::string::npos) << msg;
}

TEST(LoadIdxErrors, TrailingGarbage) {
  TempDir dir;
  Bytes file = idx_file<int16_t>(0x0B, {2, 2}, {1, 2, 3, 4});
  file.push_back(0);
  write_plain(dir / "long", file);
  write_gzip(dir / "long.gz", file);
  for (const char* name : {"long", "long.gz"}) {
    std::string msg = load_error(dir / name);
    EXPECT_NE(msg.find("trailing garbage"), std::string::npos) << msg;
    EXPECT_NE(msg.find("after the 8 bytes of data the header's shape (2, 2) of int16 needs"), std::string::npos) << msg;
  }
}

TEST(LoadIdxErrors, CorruptGzipStream) {
  TempDir dir;
  Bytes gz = gzip_bytes(dir, idx_file<int32_t>(0x0C, {4, 4}, varied<int32_t>(16)));

  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0xFF;  // the trailer: CRC-32, then the length
  write_plain(dir / "bad-crc.gz", bad_crc);

  Bytes cut = gz;
  cut.resize(cut.size() - 12);  // ends inside the compressed data
  write_plain(dir / "cut.gz", cut);

  Bytes bad_block = gz;
  bad_block[10] = 0xFF;  // the first deflate block header: 0b11 is no valid block type
  write_plain(dir / "bad-block.gz", bad_block);

  for (const char* name : {"bad-crc.gz", "cut.gz", "bad-block.gz"}) {
    std::string msg = load_error(dir / name);
    EXPECT_NE(msg.find("corrupt gzip stream"), std::string::npos) << name << ": " << msg;
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

// ---- load_idx: random damage

// Flips, overwrites, truncates or extends a valid file thousands of times (fixed seed): each load
// gives a tensor or a kiln::Error. Under ASan+UBSan this also checks that no damage reads out of bounds.
TEST(LoadIdxFuzz, DamagedFilesLoadOrThrowKilnError) {
  TempDir dir;
  Bytes plain = idx_file<int16_t>(0x0B, {3, 4, 5}, varied<int16_t>(60));
  Bytes gzip = gzip_bytes(dir, plain);
  std::mt19937 rng(20240611);
  auto below = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int loaded = 0, rejected = 0;
  const int iterations = kt::fuzz_iterations(4000);
  for (int i = 0; i < iterations; ++i) {
    bool compressed = i % 2;
    Bytes file = compressed ? gzip : plain;
    switch (below(4)) {
      case 0: file[below(file.size())] ^= static_cast<uint8_t>(1u << below(8)); break;
      case 1:
        for (size_t n = 1 + below(4); n > 0; --n) file[below(file.size())] = static_cast<uint8_t>(below(256));
        break;
      case 2: file.resize(below(file.size())); break;
      case 3:
        for (size_t n = 1 + below(8); n > 0; --n) file.push_back(static_cast<uint8_t>(below(256)));
        break;
    }
    // A new file each time: truncating and rewriting one makes ext4 flush it to disk at every close.
    std::string path = dir / ("damaged-" + std::to_string(i));
    write_plain(path, file);
    try {
      Tensor t = datasets::load_idx(path);
      ++loaded;
      // A plain file that loads is exactly its header and its data.
      if (!compressed) EXPECT_EQ(file.size(), static_cast<size_t>(4 + 4 * t.ndim() + t.nbytes())) << "case " << i;
    } catch (const kiln::Error&) {
      ++rejected;
    }
    fs::remove(path);
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

// ---- fashion_mnist

// A small stand-in for Fashion-MNIST: `n` images whose pixels encode (image, row, column) and
// labels i % 10; the images gzip-compressed, the labels plain, as either may be.
void write_fake_split(const TempDir& dir, const std::string& split, uint32_t images, uint32_t labels) {
  std::vector<uint8_t> pixels, classes;
  for (uint32_t i = 0; i < images * 28 * 28; ++i) pixels.push_back(static_cast<uint8_t>(i * 7 + i / 784));
  for (uint32_t i = 0; i < labels; ++i) classes.push_back(static_cast<uint8_t>(i % 10));
  write_gzip(dir / (split + "-images-idx3-ubyte.gz"), idx_file<uint8_t>(0x08, {images, 28, 28}, pixels));
  write_plain(dir / (split + "-labels-idx1-ubyte"), idx_file<uint8_t>(0x08, {labels}, classes));
}

TEST(FashionMnist, LoadsADirectoryShapedLikeTinygrads) {
  TempDir dir;
  write_fake_split(dir, "train", 3, 3);
  write_fake_split(dir, "t10k", 2, 2);
  datasets::Mnist m = datasets::fashion_mnist(dir.dir.string());
  EXPECT_EQ(m.X_train.shape(), (Shape{3, 1, 28, 28}));
  EXPECT_EQ(m.Y_train.shape(), (Shape{3}));
  EXPECT_EQ(m.X_test.shape(), (Shape{2, 1, 28, 28}));
  EXPECT_EQ(m.Y_test.shape(), (Shape{2}));
  for (const Tensor* t : {&m.X_train, &m.Y_train, &m.X_test, &m.Y_test}) EXPECT_EQ(t->dtype(), dtypes::uint8);
  std::vector<uint8_t> pixels = m.X_train.to_vector<uint8_t>();
  uint32_t last = 3 * 784 - 1;
  EXPECT_EQ(pixels[last], static_cast<uint8_t>(last * 7 + last / 784));
  EXPECT_EQ(m.Y_test.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1}));
}

TEST(FashionMnist, EmptyDirMeansTheEnvironmentVariable) {
  TempDir dir;
  write_fake_split(dir, "train", 4, 4);
  write_fake_split(dir, "t10k", 1, 1);
  kiln::env::ScopedEnv env("KILN_FASHION_MNIST", dir.dir.string());
  EXPECT_EQ(datasets::fashion_mnist().X_train.shape(), (Shape{4, 1, 28, 28}));
}

TEST(FashionMnist, MissingDatasetSaysHowToInstallIt) {
  TempDir dir;
  std::string msg = error_of([&] { datasets::fashion_mnist(dir.dir.string()); });
  EXPECT_NE(msg.find("train-images-idx3-ubyte"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.dir.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("sudo apt-get install dataset-fashion-mnist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("KILN_FASHION_MNIST"), std::string::npos) << msg;
}

TEST(FashionMnist, ImageAndLabelCountsMustMatch) {
  TempDir dir;
  write_fake_split(dir, "train", 3, 4);
  write_fake_split(dir, "t10k", 1, 1);
  std::string msg = error_of([&] { datasets::fashion_mnist(dir.dir.string()); });
  EXPECT_NE(msg.find("count mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 labels"), std::string::npos) << msg;
}

TEST(FashionMnist, ImagesMustBe28By28Uint8) {
  TempDir dir;
  write_fake_split(dir, "t10k", 1, 1);
  write_plain(dir / "train-images-idx3-ubyte", idx_file<uint8_t>(0x08, {1, 28, 27}, std::vector<uint8_t>(28 * 27)));
  write_plain(dir / "train-labels-idx1-ubyte", idx_file<int32_t>(0x0C, {1}, {0}));
  std::string msg = error_of([&] { datasets::fashion_mnist(dir.dir.string()); });
  EXPECT_NE(msg.find("expected uint8 images of shape (N, 28, 28), found uint8 of shape (1, 28, 27)"),
            std::string::npos) << msg;

  write_plain(dir / "train-images-idx3-ubyte", idx_file<uint8_t>(0x08, {1, 28, 28}, std::vector<uint8_t>(784)));
  msg = error_of([&] { datasets::fashion_mnist(dir.dir.string()); });
  EXPECT_NE(msg.find("expected uint8 labels of shape (N,), found int32"), std::string::npos) << msg;
}

TEST(FashionMnist, TheInstalledDebianDataset) {
  fs::path dir = datasets::kDebianFashionMnistDir;
  if (!fs::exists(dir / "train-images-idx3-ubyte.gz") && !fs::exists(dir / "train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (sudo apt-get install dataset-fashion-mnist)";
  datasets::Mnist m = datasets::fashion_mnist(dir.string());
  EXPECT_EQ(m.X_train.shape(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(m.Y_train.shape(), (Shape{60000}));
  EXPECT_EQ(m.X_test.shape(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(m.Y_test.shape(), (Shape{10000}));
  for (const Tensor* t : {&m.X_train, &m.Y_train, &m.X_test, &m.Y_test}) EXPECT_EQ(t->dtype(), dtypes::uint8);

  auto class_counts = [](const Tensor& labels) {
    std::array<int, 10> counts{};
    for (uint8_t label : labels.to_vector<uint8_t>()) {
      EXPECT_LE(label, 9);
      if (label <= 9) ++counts[label];
    }
    return counts;
  };
  for (int count : class_counts(m.Y_train)) EXPECT_EQ(count, 6000);
  for (int count : class_counts(m.Y_test)) EXPECT_EQ(count, 1000);

  // The published mean pixel of the training set is 0.2860 of full scale: the bytes are the images.
  double sum = 0;
  for (uint8_t pixel : m.X_train.to_vector<uint8_t>()) sum += pixel;
  EXPECT_NEAR(sum / (60000.0 * 784 * 255), 0.2860, 0.0005);
}

}  // namespace
