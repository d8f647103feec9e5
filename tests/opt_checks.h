#pragma once
// Running one kernel with chosen opts on scratch buffers and comparing its outputs with the same
// kernel's without opts: shared by the tests of the CPU's opts (test_beam.cpp) and of the
// work-group opts on OpenCL (test_local_opts.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "engine/beam_search.h"
#include "kiln/ir/pattern_matcher.h"
#include "runtime/device.h"

namespace kt {

// Random contents per dtype: floats in [-1, 1), integers in [-20, 20] (unsigned: [0, 40]), bools.
inline std::vector<unsigned char> random_bytes(kiln::DType dtype, size_t bytes, std::mt19937& rng) {
  using kiln::ScalarType;
  std::vector<unsigned char> out(bytes);
  const size_t item = static_cast<size_t>(dtype.itemsize());
  for (size_t off = 0; off + item <= bytes; off += item) {
    const int64_t small = std::uniform_int_distribution<int64_t>(-20, 20)(rng);
    if (dtype.scalar == ScalarType::Float32) {
      const float f = std::uniform_real_distribution<float>(-1, 1)(rng);
      std::memcpy(&out[off], &f, item);
    } else if (dtype.scalar == ScalarType::Float64) {
      const double d = std::uniform_real_distribution<double>(-1, 1)(rng);
      std::memcpy(&out[off], &d, item);
    } else if (dtype.is_bool()) {
      out[off] = small > 0;
    } else {
      const int64_t v = dtype.is_unsigned() ? small + 20 : small;
      std::memcpy(&out[off], &v, item);  // little-endian: the low bytes
    }
  }
  return out;
}

// Each PARAM's contents after running `ast` on `dev` with `opts` from the given initial contents.
inline std::vector<std::vector<unsigned char>> run_with_opts(const kiln::UOpRef& ast, kiln::runtime::Device& dev,
                                                             const kiln::codegen::Target& target,
                                                             const std::vector<kiln::codegen::Opt>& opts,
                                                             const std::vector<std::vector<unsigned char>>& initial) {
  kiln::engine::KernelBuffers bufs(ast, dev);
  for (size_t i = 0; i < bufs.count(); i++) bufs.write(i, initial[i].data());
  kiln::engine::Candidate c = kiln::engine::compile_candidate(ast, dev, target, opts);
  kiln::engine::time_candidate(c, bufs, 0);
  std::vector<std::vector<unsigned char>> out(bufs.count());
  for (size_t i = 0; i < bufs.count(); i++) {
    out[i].resize(bufs.bytes(i));
    bufs.read(i, out[i].data());
  }
  return out;
}

// Floats within 1e-4 relative + 1e-4 absolute (opts and work-groups reorder float sums of up to a
// few thousand terms of magnitude <= 1); everything else bit-exact.
inline void expect_same_contents(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                                 kiln::DType dtype, const std::string& what) {
  using kiln::ScalarType;
  ASSERT_EQ(got.size(), want.size()) << what;
  if (dtype.scalar != ScalarType::Float32 && dtype.scalar != ScalarType::Float64) {
    EXPECT_EQ(got, want) << what;
    return;
  }
  const size_t n = got.size() / static_cast<size_t>(dtype.itemsize());
  for (size_t i = 0; i < n; i++) {
    double g, w;
    if (dtype.scalar == ScalarType::Float32) {
      float gf, wf;
      std::memcpy(&gf, &got[i * 4], 4);
      std::memcpy(&wf, &want[i * 4], 4);
      g = gf, w = wf;
    } else {
      std::memcpy(&g, &got[i * 8], 8);
      std::memcpy(&w, &want[i * 8], 8);
    }
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(g, w, 1e-4 + 1e-4 * std::fabs(w)) << what << " element " << i;
  }
}

// A kernel's buffers with random contents and what the kernel leaves in them without opts;
// expect_same_with() runs it with opts from the same contents and expects the same.
class WithoutOpts {
 public:
  WithoutOpts(const kiln::UOpRef& ast, kiln::runtime::Device& dev, const kiln::codegen::Target& noopt, std::mt19937& rng)
      : ast_(ast), dev_(dev) {
    kiln::engine::KernelBuffers shape(ast, dev);
    for (size_t i = 0; i < shape.count(); i++) {
      dtypes_.push_back(shape.dtype(i));
      initial_.push_back(random_bytes(shape.dtype(i), shape.bytes(i), rng));
    }
    want_ = run_with_opts(ast, dev, noopt, {}, initial_);
  }

  void expect_same_with(const std::vector<kiln::codegen::Opt>& opts, const kiln::codegen::Target& target) const {
    const auto got = run_with_opts(ast_, dev_, target, opts, initial_);
    const std::string what = kiln::kernel_name(ast_) + " with opts:\n" + kiln::codegen::opts_to_string(opts);
    for (size_t i = 0; i < got.size(); i++) expect_same_contents(got[i], want_[i], dtypes_[i], what + "buffer " + std::to_string(i));
  }

 private:
  kiln::UOpRef ast_;
  kiln::runtime::Device& dev_;
  std::vector<kiln::DType> dtypes_;
  std::vector<std::vector<unsigned char>> initial_, want_;
};

}  // namespace kt
