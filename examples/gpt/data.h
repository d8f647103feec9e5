#pragma once
// The corpus: every text file of a directory (Debian's fortunes by default), in name order, as
// bytes (the byte-level tokenizer: token = byte, 256 of them). Fortunes are separated by lines of
// "%"; every tenth fortune goes to validation, the rest to training, so the split is deterministic
// and both halves draw from every file.
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace gpt {

struct Corpus {
  std::vector<uint8_t> train, val;
  int64_t files = 0;
};

// A fortune file is plain text with no extension; strfile's indexes (.dat) and the UTF-8 copies
// (.u8, links to the same text) are skipped.
inline bool is_text_file(const std::filesystem::directory_entry& entry) {
  const std::string ext = entry.path().extension().string();
  return entry.is_regular_file() && !entry.is_symlink() && ext != ".dat" && ext != ".u8";
}

inline Corpus load_corpus(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    kiln::throw_error("corpus: expected a directory of text files, got '", dir, "' (install Debian's fortunes)");
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (is_text_file(entry)) paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  Corpus corpus;
  int64_t fortune = 0;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    corpus.files++;
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find("\n%\n", start);
      end = end == std::string::npos ? text.size() : end + 3;
      auto& out = fortune++ % 10 == 9 ? corpus.val : corpus.train;
      out.insert(out.end(), text.data() + start, text.data() + end);
      start = end;
    }
  }
  if (corpus.val.size() < 2 || corpus.train.size() < 2)
    kiln::throw_error("corpus: too little text in '", dir, "' (", corpus.files, " files)");
  return corpus;
}

struct Batch {
  kiln::Tensor x, y;  // int32 (batch, block): tokens and the tokens that follow them
};

// `batch` windows of `block` + 1 bytes at offsets drawn from `rng`.
inline Batch sample_batch(const std::vector<uint8_t>& data, int64_t batch, int64_t block, std::mt19937_64& rng) {
  const auto size = static_cast<int64_t>(data.size());
  if (size <= block) kiln::throw_error("corpus: ", size, " bytes are too few for a block of ", block);
  std::uniform_int_distribution<int64_t> offset(0, size - block - 1);
  std::vector<int32_t> x, y;
  for (int64_t b = 0; b < batch; b++) {
    const int64_t o = offset(rng);
    for (int64_t t = 0; t < block; t++) {
      x.push_back(data[static_cast<size_t>(o + t)]);
      y.push_back(data[static_cast<size_t>(o + t + 1)]);
    }
  }
  return {kiln::Tensor::from_vector(x, {batch, block}), kiln::Tensor::from_vector(y, {batch, block})};
}

}  // namespace gpt
