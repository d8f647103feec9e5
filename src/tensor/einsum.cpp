// einsum: each operand is permuted to a common, sorted letter order and broadcast over the letters
// it lacks; the product is summed over the letters the output drops (tinygrad's construction).
#include <algorithm>
#include <map>
#include <set>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

struct Formula {
  std::vector<std::string> inputs;
  std::string output;
};

// Splits "ab,bc->ac" and replaces "..." by letters the formula does not use (right-aligned, so
// operands with fewer leading dims broadcast, as NumPy does).
Formula parse(std::string formula, const std::vector<Tensor>& operands) {
  formula.erase(std::remove(formula.begin(), formula.end(), ' '), formula.end());
  const size_t arrow = formula.find("->");
  Formula f;
  std::string lhs = formula.substr(0, arrow);
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    f.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (f.inputs.size() != operands.size())
    throw_error("einsum: '", formula, "' names ", f.inputs.size(), " operands, got ", operands.size());
  std::string unused;
  for (char c = 'A'; c <= 'z'; c++)
    if (std::isalpha(static_cast<unsigned char>(c)) && formula.find(c) == std::string::npos) unused += c;
  size_t ellipsis_dims = 0;
  for (size_t i = 0; i < f.inputs.size(); i++) {
    std::string& in = f.inputs[i];
    size_t at = in.find("...");
    if (at == std::string::npos) continue;
    int64_t n = operands[i].ndim() - static_cast<int64_t>(in.size() - 3);
    if (n < 0) throw_error("einsum: operand ", i, " of shape ", shape_to_string(operands[i].shape()), " has fewer dims than '", in, "'");
    ellipsis_dims = std::max(ellipsis_dims, static_cast<size_t>(n));
    in.replace(at, 3, unused.substr(unused.size() - static_cast<size_t>(n)));
  }
  const std::string ellipsis = unused.substr(unused.size() - ellipsis_dims);
  if (arrow != std::string::npos) {
    f.output = formula.substr(arrow + 2);
    if (size_t at = f.output.find("..."); at != std::string::npos) f.output.replace(at, 3, ellipsis);
  } else {  // implicit output: the broadcast dims, then every letter used once, sorted
    std::string all;
    for (const std::string& in : f.inputs) all += in;
    std::set<char> once;
    for (char c : all)
      if (std::count(all.begin(), all.end(), c) == 1 && ellipsis.find(c) == std::string::npos) once.insert(c);
    f.output = ellipsis + std::string(once.begin(), once.end());
  }
  return f;
}

// A letter repeated within one operand ("ii", "iij") names its diagonal: the two axes become one,
// last, read at equal positions (permuted last and flattened, row r starts at r * (n + 1)).
// Returns the operand's letters afterwards.
std::string take_diagonals(Tensor& x, std::string in, size_t operand) {
  for (size_t k = 1; k < in.size(); k++) {
    const size_t j = in.find(in[k]);
    if (j == k) continue;
    const int64_t n = x.shape()[j];
    if (x.shape()[k] != n)
      throw_error("einsum: letter '", in[k], "' repeats in operand ", operand, " ('", in, "') over axes of sizes ", n,
                  " and ", x.shape()[k]);
    std::vector<int> order;
    std::string kept;
    for (size_t d = 0; d < in.size(); d++)
      if (d != j && d != k) order.push_back(static_cast<int>(d)), kept += in[d];
    order.push_back(static_cast<int>(j));
    order.push_back(static_cast<int>(k));
    Tensor flat = x.permute(order).flatten(-2);
    Pairs pad(static_cast<size_t>(flat.ndim()), {0, 0});
    pad.back() = {0, n};
    Shape rows(flat.shape().begin(), flat.shape().end() - 1), diagonal = rows;
    rows.insert(rows.end(), {n, n + 1});
    diagonal.push_back(n);
    Pairs first_column;
    for (int64_t size : rows) first_column.push_back({0, size});
    first_column.back() = {0, 1};
    x = flat.pad(pad).reshape(rows).shrink(first_column).reshape(diagonal);
    in = kept + in[k];
    k = 0;  // the letters moved: look again from the start
  }
  return in;
}

}  // namespace

Tensor Tensor::einsum(const std::string& formula, const std::vector<Tensor>& operands) {
  if (operands.empty()) throw_error("einsum: expected at least one operand");
  Formula f = parse(formula, operands);
  std::vector<Tensor> xs = operands;
  std::map<char, int64_t> sizes;  // sorted letters: the common axis order
  for (size_t i = 0; i < xs.size(); i++) {
    std::string& in = f.inputs[i];
    if (static_cast<int64_t>(in.size()) != xs[i].ndim())
      throw_error("einsum: '", in, "' names ", in.size(), " dims but operand ", i, " has shape ",
                  shape_to_string(xs[i].shape()));
    for (char c : in)
      if (!std::isalpha(static_cast<unsigned char>(c))) throw_error("einsum: '", c, "' is not a letter in '", formula, "'");
    in = take_diagonals(xs[i], in, i);
    for (size_t k = 0; k < in.size(); k++) {
      char c = in[k];
      int64_t n = xs[i].shape()[k];
      auto [it, fresh] = sizes.try_emplace(c, n);
      if (!fresh && it->second != n && it->second != 1 && n != 1)
        throw_error("einsum: letter '", c, "' is ", it->second, " in one operand and ", n, " in operand ", i);
      if (!fresh) it->second = std::max(it->second, n);
    }
  }
  for (char c : f.output)
    if (!sizes.count(c) || std::count(f.output.begin(), f.output.end(), c) != 1)
      throw_error("einsum: output letter '", c, "' must appear once in the output and in some operand ('", formula, "')");
  Shape full;
  for (auto [c, n] : sizes) full.push_back(n);
  std::optional<Tensor> product;
  for (size_t i = 0; i < xs.size(); i++) {
    const std::string& in = f.inputs[i];
    std::vector<int> order(in.size());
    for (size_t k = 0; k < in.size(); k++) order[k] = static_cast<int>(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return in[a] < in[b]; });
    Shape s;
    for (auto [c, n] : sizes) s.push_back(in.find(c) == std::string::npos ? 1 : xs[i].shape()[in.find(c)]);
    Tensor x = xs[i].permute(order).reshape(s).expand(full);
    product = product ? *product * x : x;
  }
  std::vector<int> drop;
  std::string kept;
  int axis = 0;
  for (auto [c, n] : sizes) {
    if (f.output.find(c) == std::string::npos) drop.push_back(axis);
    else kept += c;
    axis++;
  }
  Tensor r = drop.empty() ? *product : product->sum(drop);
  std::vector<int> to_output;
  for (char c : f.output) to_output.push_back(static_cast<int>(kept.find(c)));
  return r.permute(to_output);
}

}  // namespace kiln
