#include "llm/pair_merge.h"

#include <queue>

namespace kiln::llm {

namespace {

struct Symbol {
  size_t begin, size;  // size 0: merged into the symbol on its left
  int prev, next;      // -1: none
};

struct Candidate {
  double rank;
  int left, right;
  size_t size;  // both symbols' sizes when queued: a candidate whose symbols changed since is stale
};

struct Worse {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

std::vector<std::string_view> merge_pairs(std::string_view word, const std::vector<size_t>& sizes,
                                          const PairRank& rank) {
  std::vector<Symbol> symbols;
  symbols.reserve(sizes.size());
  size_t begin = 0;
  for (size_t size : sizes) {
    const int i = static_cast<int>(symbols.size());
    symbols.push_back({begin, size, i - 1, i + 1 == static_cast<int>(sizes.size()) ? -1 : i + 1});
    begin += size;
  }
  const auto text = [&](int i) { return word.substr(symbols[i].begin, symbols[i].size); };
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    if (std::optional<double> r = rank(text(left), text(right))) {
      queue.push({*r, left, right, symbols[left].size + symbols[right].size});
    }
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // Symbols only grow or vanish, so unchanged sizes mean the pair is still adjacent and unmerged.
    if (left.size == 0 || right.size == 0 || left.size + right.size != c.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    consider(left.prev, c.left);
    consider(c.left, left.next);
  }

  std::vector<std::string_view> pieces;
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) pieces.push_back(text(i));
  return pieces;
}

}  // namespace kiln::llm
