// einsum against a naive float64 reference that loops over every assignment of the letters, plus
// finite-difference gradients and errors for malformed formulas.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "error_message.h"
#include "gradcheck.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
namespace dtypes = kiln::dtypes;

// sum over all letters not in `out` of the product of the operands (explicit formulas only).
NdArray naive_einsum(const std::vector<std::string>& ins, const std::string& out, const std::vector<NdArray>& xs) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ins.size(); i++)
    for (size_t k = 0; k < ins[i].size(); k++) size[ins[i][k]] = xs[i].shape[k];
  ref::Shape out_shape;
  for (char c : out) out_shape.push_back(size[c]);
  NdArray r(out_shape, 0.0);
  std::vector<char> letters;
  for (auto [c, n] : size) letters.push_back(c);
  std::map<char, int64_t> at;
  for (char c : letters) at[c] = 0;
  while (true) {
    double p = 1;
    for (size_t i = 0; i < ins.size(); i++) {
      ref::Index idx;
      for (char c : ins[i]) idx.push_back(at[c]);
      p *= xs[i].at(idx);
    }
    ref::Index oidx;
    for (char c : out) oidx.push_back(at[c]);
    r.at(oidx) += p;
    size_t k = 0;  // next assignment, odometer style
    for (; k < letters.size(); k++) {
      if (++at[letters[k]] < size[letters[k]]) break;
      at[letters[k]] = 0;
    }
    if (k == letters.size()) break;
  }
  return r;
}

struct Case {
  std::string formula;                 // what kiln gets
  std::vector<std::string> ins;        // the same, explicit, for the reference
  std::string out;
  std::vector<ref::Shape> shapes;
};

TEST(Einsum, MatchesNaiveLoopsAndGradients) {
  const std::vector<Case> cases = {
      {"ij,jk->ik", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},                       // implicit output
      {"bij,bjk->bik", {"bij", "bjk"}, "bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ij->ji", {"ij"}, "ji", {{3, 5}}},
      {"ij->", {"ij"}, "", {{3, 5}}},
      {"i,j->ij", {"i", "j"}, "ij", {{3}, {4}}},
      {"ijk,ik->j", {"ijk", "ik"}, "j", {{2, 3, 4}, {2, 4}}},
      {"ab,bc,cd->ad", {"ab", "bc", "cd"}, "ad", {{2, 3}, {3, 4}, {4, 2}}},
      {"...ij,...jk->...ik", {"zij", "zjk"}, "zik", {{3, 2, 4}, {3, 4, 2}}},  // ellipsis
      {" ba , ca -> bc ", {"ba", "ca"}, "bc", {{3, 5}, {2, 5}}},             // spaces, unsorted letters
      // a letter repeated within one operand: its diagonal
      {"ii->", {"ii"}, "", {{4, 4}}},
      {"ii", {"ii"}, "", {{3, 3}}},                                           // implicit: the trace
      {"ii->i", {"ii"}, "i", {{5, 5}}},
      {"iij->j", {"iij"}, "j", {{3, 3, 2}}},
      {"jii->ij", {"jii"}, "ij", {{2, 3, 3}}},
      {"iji->ij", {"iji"}, "ij", {{3, 2, 3}}},
      {"iii->i", {"iii"}, "i", {{3, 3, 3}}},
      {"iijj->ij", {"iijj"}, "ij", {{2, 2, 3, 3}}},
      {"ii,ij->j", {"ii", "ij"}, "j", {{3, 3}, {3, 4}}},
      {"...ii->...i", {"zii"}, "zi", {{2, 3, 3}}},
      {"ii->i", {"ii"}, "i", {{1, 1}}},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    std::vector<NdArray> xs;
    for (const auto& s : c.shapes) xs.push_back(ref::random(s, seed++));
    std::vector<Tensor> ts;
    for (const NdArray& x : xs) ts.push_back(kt::make(x, dtypes::float64));
    EXPECT_TRUE(kt::matches(Tensor::einsum(c.formula, ts), naive_einsum(c.ins, c.out, xs))) << c.formula;
    EXPECT_TRUE(gc::check([&](const std::vector<Tensor>& v) { return Tensor::einsum(c.formula, v); }, xs)) << c.formula;
  }
}

TEST(Einsum, BadFormulasAreClearErrors) {
  Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({3, 4});
  EXPECT_NE(kt::error_of([&] { Tensor::einsum("ij,jk->ik", {a}); }).find("names 2 operands, got 1"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { Tensor::einsum("ijk,jk->ik", {a, b}); }).find("names 3 dims"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { Tensor::einsum("ij,ik->jk", {a, b}); }).find("letter 'i' is 2"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { Tensor::einsum("ii->i", {a}); }).find("repeats in operand 0 ('ii') over axes of sizes 2 and 3"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { Tensor::einsum("ij,jk->iz", {a, b}); }).find("output letter 'z'"), std::string::npos);
}

}  // namespace
