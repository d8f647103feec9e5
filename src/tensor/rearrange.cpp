// Rearranging ops built from movement ops alone (free views until a kernel reads them), with
// tinygrad's names and semantics: roll, repeat_interleave, diag, diagonal, meshgrid, unfold and
// einops-style rearrange.
#include <algorithm>
#include <cctype>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// One side of a rearrange formula: axis names, and the [begin, end) name ranges in parentheses.
struct FormulaSide {
  std::vector<std::string> names;
  Pairs groups;
};

bool valid_axis_name(const std::string& name) {
  if (name == "...") return true;
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name.front() == '_' || name.back() == '_')
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

FormulaSide parse_side(const std::string& side, const std::string& formula) {
  FormulaSide out;
  std::optional<int64_t> open;
  auto add_name = [&](std::string name) {
    if (name == "1") {  // an axis of size 1: an empty group
      out.groups.push_back({static_cast<int64_t>(out.names.size()), static_cast<int64_t>(out.names.size())});
      return;
    }
    if (name == "\u2026") name = "...";
    if (!valid_axis_name(name)) throw_error("rearrange: invalid axis name '", name, "' in '", formula, "'");
    out.names.push_back(name);
  };
  std::string word;
  for (size_t i = 0; i <= side.size(); i++) {
    char c = i < side.size() ? side[i] : ' ';
    if (c != '(' && c != ')' && !std::isspace(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (!word.empty()) add_name(std::exchange(word, ""));
    if (c == '(') {
      if (open) throw_error("rearrange: nested parentheses in '", formula, "'");
      open = static_cast<int64_t>(out.names.size());
    } else if (c == ')') {
      if (!open) throw_error("rearrange: unbalanced parentheses in '", formula, "'");
      out.groups.push_back({*open, static_cast<int64_t>(out.names.size())});
      open.reset();
    }
  }
  if (open) throw_error("rearrange: unbalanced parentheses in '", formula, "'");
  return out;
}

// "..." replaced by `count` numbered names; group bounds after it move along.
void expand_ellipsis(FormulaSide& side, int64_t count) {
  auto it = std::find(side.names.begin(), side.names.end(), "...");
  if (it == side.names.end()) return;
  const int64_t at = it - side.names.begin();
  std::vector<std::string> numbered;
  for (int64_t j = 0; j < count; j++) numbered.push_back("..." + std::to_string(j));
  it = side.names.erase(it);
  side.names.insert(it, numbered.begin(), numbered.end());
  for (auto& [b, e] : side.groups) {
    if (at < b) b += count - 1;
    if (at < e) e += count - 1;
  }
}

// [0, size) of every axis
Pairs whole(const Shape& shape) {
  Pairs p;
  for (int64_t s : shape) p.push_back({0, s});
  return p;
}

Shape with(Shape shape, int64_t last) {
  shape.push_back(last);
  return shape;
}

Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes) {
  Shape s(x.shape().begin(), x.shape().begin() + dim);
  s.insert(s.end(), sizes.begin(), sizes.end());
  s.insert(s.end(), x.shape().begin() + dim + 1, x.shape().end());
  return x.reshape(s);
}

}  // namespace

Tensor Tensor::roll(std::vector<int64_t> shifts, std::vector<int> dims) const {
  if (dims.empty()) {
    if (shifts.size() != 1) throw_error("roll: without dims, expected one shift, got ", shifts.size());
    return flatten().roll(shifts, {0}).reshape(shape());
  }
  if (dims.size() != shifts.size())
    throw_error("roll: expected as many shifts as dims, got ", shifts.size(), " shifts and ", dims.size(), " dims");
  if (numel() == 0) return *this;
  // the tensor repeated twice along each rolled axis holds every rotation as a window
  std::vector<int64_t> repeats(static_cast<size_t>(ndim()), 1);
  Pairs window = whole(shape());
  for (size_t i = 0; i < dims.size(); i++) {
    const int a = normalize_axis(dims[i], "roll");
    const int64_t n = shape()[a], start = n - ((shifts[i] % n) + n) % n;
    repeats[a] = 2;
    window[a] = {start, start + n};
  }
  return repeat(repeats).shrink(window);
}

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int> dim) const {
  if (repeats < 0) throw_error("repeat_interleave: repeats must be >= 0, got ", repeats);
  if (!dim) return flatten().repeat_interleave(repeats, 0);
  const int a = normalize_axis(*dim, "repeat_interleave");
  Shape s = shape(), expanded = shape();
  s.insert(s.begin() + a + 1, 1);
  expanded.insert(expanded.begin() + a + 1, repeats);
  Shape out = shape();
  out[a] *= repeats;
  return reshape(s).expand(expanded).reshape(out);
}

Tensor Tensor::diag() const {
  if (ndim() != 1) throw_error("diag: expected a 1-D tensor, got ", shape_to_string(shape()));
  // each element followed by n zeros, read in rows of n: the elements land on the diagonal
  const int64_t n = shape()[0];
  return unsqueeze(-1).pad({{0, 0}, {0, n}}).flatten().shrink({{0, n * n}}).reshape({n, n});
}

Tensor Tensor::diagonal(int64_t offset, int dim1, int dim2) const {
  const int d1 = normalize_axis(dim1, "diagonal"), d2 = normalize_axis(dim2, "diagonal");
  if (d1 == d2) throw_error("diagonal: dim1 and dim2 must differ, got ", dim1, " and ", dim2);
  std::vector<int> order;
  for (int d = 0; d < ndim(); d++)
    if (d != d1 && d != d2) order.push_back(d);
  order.push_back(d1);
  order.push_back(d2);
  Tensor x = permute(order);
  const size_t nd = order.size();
  Pairs keep = whole(x.shape());
  if (offset >= 0)
    keep[nd - 1].first = std::min(offset, keep[nd - 1].second);
  else
    keep[nd - 2].first = std::min(-offset, keep[nd - 2].second);
  x = x.shrink(keep);
  const int64_t n = std::min(x.shape()[nd - 2], x.shape()[nd - 1]);
  Shape batch(x.shape().begin(), x.shape().end() - 2), square = batch, rows = batch, out = batch;
  square.insert(square.end(), {n, n});
  rows.insert(rows.end(), {n, n + 1});
  out.push_back(n);
  // the n x n square flat, padded by n and read in rows of n + 1: the diagonal is the first column
  Pairs pad(batch.size(), {0, 0}), first = whole(rows);
  pad.push_back({0, n});
  first.back() = {0, 1};
  return x.shrink(whole(square)).reshape(with(batch, n * n)).pad(pad).reshape(rows).shrink(first).reshape(out);
}

std::vector<Tensor> Tensor::meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  if (indexing != "ij" && indexing != "xy")
    throw_error("meshgrid: indexing must be 'ij' or 'xy', got '", indexing, "'");
  if (tensors.empty()) throw_error("meshgrid: expected at least one tensor");
  const size_t n = tensors.size();
  if (n == 1) return tensors;
  Shape out(n);
  std::vector<size_t> axis(n);
  for (size_t i = 0; i < n; i++) {
    if (tensors[i].ndim() > 1)
      throw_error("meshgrid: expected 0-D or 1-D tensors, got ", shape_to_string(tensors[i].shape()), " at ", i);
    axis[i] = indexing == "xy" && i < 2 ? 1 - i : i;  // "xy": the first two axes swap
    out[axis[i]] = tensors[i].numel();
  }
  std::vector<Tensor> grids;
  for (size_t i = 0; i < n; i++) {
    Shape s(n, 1);
    s[axis[i]] = out[axis[i]];
    grids.push_back(tensors[i].reshape(s).expand(out));
  }
  return grids;
}

Tensor Tensor::unfold(int dim, int64_t size, int64_t step) const {
  const int a = normalize_axis(dim, "unfold");
  if (size < 0 || size > shape()[a])
    throw_error("unfold: size must be in [0, ", shape()[a], "] (dim ", dim, " of ", shape_to_string(shape()), "), got ",
                size);
  if (step <= 0) throw_error("unfold: step must be > 0, got ", step);
  if (size == 0) {
    // pool has no empty kernel: windows of 1 over the axis padded by one element give as many windows
    // as size 0 has (n / step + 1), then each keeps none of its element
    std::vector<std::pair<int64_t, int64_t>> grow(static_cast<size_t>(ndim()), {0, 0}), keep;
    grow[a] = {0, 1};
    Tensor windows = pad(grow).unfold(a, 1, step);
    for (int64_t d : windows.shape()) keep.push_back({0, d});
    keep.back() = {0, 0};
    return windows.shrink(keep);
  }
  std::vector<int> to_last, back;
  for (int d = 0; d < ndim(); d++)
    if (d != a) to_last.push_back(d);
  to_last.push_back(a);
  // the windows axis returns to a's place, the window itself stays last
  for (int d = 0; d < ndim(); d++) back.push_back(d < a ? d : d == a ? static_cast<int>(ndim()) - 1 : d - 1);
  back.push_back(static_cast<int>(ndim()));
  return permute(to_last).pool({size}, {step}, {1}).permute(back);
}

Tensor Tensor::rearrange(const std::string& formula, const std::vector<std::pair<std::string, int64_t>>& sizes) const {
  const size_t arrow = formula.find("->");
  if (arrow == std::string::npos || formula.find("->", arrow + 2) != std::string::npos)
    throw_error("rearrange: expected exactly one '->' in '", formula, "'");
  FormulaSide lhs = parse_side(formula.substr(0, arrow), formula), rhs = parse_side(formula.substr(arrow + 2), formula);
  for (const auto& [name, size] : sizes)
    if (std::find(lhs.names.begin(), lhs.names.end(), name) == lhs.names.end())
      throw_error("rearrange: axis '", name, "' is not used in '", formula, "'");
  std::vector<std::string> l = lhs.names, r = rhs.names;
  std::sort(l.begin(), l.end());
  std::sort(r.begin(), r.end());
  if (l != r || std::adjacent_find(l.begin(), l.end()) != l.end())
    throw_error("rearrange: each axis must appear once on each side of '", formula, "'");
  int64_t grouped_away = 0;  // names inside groups beyond one per group
  for (auto [b, e] : lhs.groups) {
    for (int64_t i = b; i < e; i++)
      if (lhs.names[i] == "...")
        throw_error("rearrange: '...' cannot be inside parentheses on the left of '", formula, "'");
    grouped_away += e - b - 1;
  }
  const bool ellipsis = std::count(lhs.names.begin(), lhs.names.end(), "...") == 1;
  const int64_t named_dims = static_cast<int64_t>(lhs.names.size()) - grouped_away - (ellipsis ? 1 : 0);
  if (ellipsis ? named_dims > ndim() : named_dims != ndim())
    throw_error("rearrange: '", formula, "' names ", named_dims, " dims, the input ", shape_to_string(shape()), " has ",
                ndim());
  if (ellipsis) {
    expand_ellipsis(lhs, ndim() - named_dims);
    expand_ellipsis(rhs, ndim() - named_dims);
  }
  auto given = [&](const std::string& name) -> std::optional<int64_t> {
    for (const auto& [n, s] : sizes)
      if (n == name) return s;
    return std::nullopt;
  };
  Tensor t = *this;
  for (auto [b, e] : lhs.groups) {
    Shape split;
    for (int64_t i = b; i < e; i++) split.push_back(given(lhs.names[i]).value_or(-1));
    t = unflatten(t, b, split);
  }
  for (size_t i = 0; i < lhs.names.size(); i++)
    if (auto s = given(lhs.names[i]); s && *s != t.shape()[i])
      throw_error("rearrange: axis '", lhs.names[i], "' was given size ", *s, " but has ", t.shape()[i]);
  std::vector<int> order;
  for (const std::string& name : rhs.names)
    order.push_back(static_cast<int>(std::find(lhs.names.begin(), lhs.names.end(), name) - lhs.names.begin()));
  t = t.permute(order);
  for (auto g = rhs.groups.rbegin(); g != rhs.groups.rend(); ++g)
    t = g->first < g->second ? t.flatten(static_cast<int>(g->first), static_cast<int>(g->second) - 1)
                             : t.unsqueeze(static_cast<int>(g->first));
  return t;
}

}  // namespace kiln
