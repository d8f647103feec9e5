#pragma once
// The merge loop both BPE tokenizers share: a word starts as its characters; every adjacent pair that `rank` knows
// is a candidate, the best (lowest rank) merges first, the leftmost on ties, and merging makes new candidates with
// the neighbours, until none is left. SentencePiece ranks a pair by its merged piece's score, byte-level BPE by
// the merge list's order.
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace kiln::llm {

using PairRank = std::function<std::optional<double>(std::string_view left, std::string_view right)>;

// `sizes`: the byte sizes of the word's first symbols, in order (they sum to word.size()). Returns the pieces.
std::vector<std::string_view> merge_pairs(std::string_view word, const std::vector<size_t>& sizes,
                                          const PairRank& rank);

}  // namespace kiln::llm
