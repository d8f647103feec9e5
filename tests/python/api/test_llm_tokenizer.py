"""kiln.llm.Tokenizer against references: SentencePiece itself (a BPE model trained here with LLaMA's settings:
kiln must give exactly its ids), and for byte-level BPE a reference written from the algorithm's definition
(the pre-split regexes run by Python's re with \\p{L}/\\p{N}/\\s spelled out from unicodedata, GPT-2's bytes_to_unicode
and its merge loop) over merges learned here. Encodings must be equal; decode(encode(x)) must give x back."""
import functools
import random
import re
import sys
import unicodedata
import pytest

spm = pytest.importorskip("sentencepiece")
from kiln import KilnError
from kiln.llm import Tokenizer

def training_text(seed=0):
  """A varied corpus: words, numbers, punctuation, accented Latin, CJK, whitespace runs and line breaks."""
  rng = random.Random(seed)
  words = ("the quick brown fox jumps over lazy dog tokenizer merges pairs while scores rank them and bytes fall back "
           "llama model kiln compiler tensor graph kernel fused into one loop").split()
  extra = ["café", "été", "naïve", "façade", "Ångström", "東京", "日本語", "の", "首都", "über", "ñandú", "42", "3.14",
           "2024", "(x)", "\"quoted\"", "it's", "don't", "e-mail", "a+b=c", "#tag", "100%"]
  lines = []
  for _ in range(1500):
    n = rng.randint(3, 14)
    pick = lambda r: rng.choice(words) if r < 0.75 else rng.choice(extra) if r < 0.9 else str(rng.randrange(10**6))
    line = " ".join(pick(rng.random()) for _ in range(n))
    if rng.random() < 0.2: line = line.capitalize() + "."
    if rng.random() < 0.1: line = "  " + line + "   "
    if rng.random() < 0.1: line = line.replace(" ", "\t", 1)
    lines.append(line)
  return "\n".join(lines) + "\n"

# Text kiln's encodings are compared on: every case the brief of the tokenizer names, and some.
SAMPLES = ["", " ", "  ", "a", "Hello world", " leading space", "trailing space ", "  both  ", "many     spaces here",
           "digits 1234567890 and 3.14159, 2024-11-28", "line one\nline two\n\nline four\n", "\n", "\n\nx", "tab\tsep",
           "emoji 🦙🔥 and ❤️ too", "CJK 東京は日本の首都です。", "accents: Ça été très précis, naïve façade, Ångström",
           "mixed: it's the fox's (quick) e-mail #tag 100% a+b=c", "ｆｕｌｌｗｉｄｔｈ", "Ελληνικά Русский עברית العربية",
           "\u200b zero width", "<s> and </s> are text here", "the<|im|>fox <|im|>", "x" * 200]

@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory):
  d = tmp_path_factory.mktemp("spm")
  (d / "corpus.txt").write_text(training_text(), encoding="utf-8")
  spm.SentencePieceTrainer.train(
      input=str(d / "corpus.txt"), model_prefix=str(d / "m"), model_type="bpe", vocab_size=700, byte_fallback=True,
      split_digits=True, add_dummy_prefix=True, allow_whitespace_only_pieces=True, normalization_rule_name="identity",
      remove_extra_whitespaces=False, character_coverage=1.0, user_defined_symbols=["<|im|>"], minloglevel=2)
  return spm.SentencePieceProcessor(model_file=str(d / "m.model"))

def kiln_from_sentencepiece(sp):
  """The Tokenizer a LLaMA GGUF of this model describes (llama.cpp's convert script writes these fields)."""
  def token_type(i):
    if sp.is_unknown(i): return 2
    if sp.is_control(i): return 3
    if sp.is_byte(i): return 6
    if sp.is_unused(i): return 5
    return 4 if sp.id_to_piece(i) == "<|im|>" else 1
  n = sp.get_piece_size()
  return Tokenizer.from_vocab("llama", [sp.id_to_piece(i) for i in range(n)],
                              scores=[sp.get_score(i) for i in range(n)],
                              token_types=[token_type(i) for i in range(n)], bos_id=sp.bos_id(), eos_id=sp.eos_id(),
                              unknown_id=sp.unk_id())

def test_sentencepiece_encodings_equal(sentencepiece_model):
  sp = sentencepiece_model
  tok = kiln_from_sentencepiece(sp)
  assert (tok.bos, tok.eos, tok.vocab_size) == (sp.bos_id(), sp.eos_id(), sp.get_piece_size())
  rng = random.Random(1)
  corpus_lines = training_text(seed=5).split("\n")
  texts = SAMPLES + rng.sample(corpus_lines, 100) + ["\n".join(rng.sample(corpus_lines, 5)) for _ in range(20)]
  for text in texts:
    ids = sp.encode(text)
    assert tok.encode(text, add_bos=False) == ids, text
    assert tok.encode(text) == [sp.bos_id()] + ids, text
    assert tok.decode(tok.encode(text)) == text == sp.decode(ids), text

def test_sentencepiece_random_strings(sentencepiece_model):
  """Random strings over an alphabet of pieces, rare characters and whitespace: merge order and fallback."""
  sp = sentencepiece_model
  tok = kiln_from_sentencepiece(sp)
  rng = random.Random(2)
  alphabet = ["the", "e", "th", " ", "  ", "\n", "\t", "1", "23", "é", "東", "🦙", "x", "'", ".", "qu", "ick", "<|im|>",
              "\x00", "\x7f", "ÿ"]
  for _ in range(300):
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 15)))
    assert tok.encode(text, add_bos=False) == sp.encode(text), repr(text)
    assert tok.decode(tok.encode(text)) == text

# ---- byte-level BPE ----

def bytes_to_unicode():
  """GPT-2's table (encoder.py): printable Latin-1 bytes stay, the others move to 256 and up, in byte order."""
  bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
  cs = bs[:]
  n = 0
  for b in range(256):
    if b not in bs:
      bs.append(b)
      cs.append(256 + n)
      n += 1
  return dict(zip(bs, map(chr, cs)))

def char_class_pattern(predicate):
  """A regex character class of the code points `predicate` accepts, as ranges."""
  ranges, start = [], None
  for cp in range(sys.maxunicode + 2):
    inside = cp <= sys.maxunicode and predicate(cp)
    if inside and start is None: start = cp
    if not inside and start is not None:
      ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(cp - 1)) if cp - 1 > start else ""))
      start = None
  return "".join(ranges)

# Unicode's White_Space property (regex engines' \s); Python's str.isspace() differs (it counts U+001C-U+001F).
WHITE_SPACE = {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F,
               0x3000}

@functools.lru_cache(maxsize=None)
def unicode_classes():
  """\\p{L}, \\p{N} and \\s as the insides of character classes."""
  return (char_class_pattern(lambda cp: unicodedata.category(chr(cp))[0] == "L"),
          char_class_pattern(lambda cp: unicodedata.category(chr(cp))[0] == "N"),
          char_class_pattern(lambda cp: cp in WHITE_SPACE))

@functools.lru_cache(maxsize=None)
def pre_split_regex(pattern):
  L, N, S = unicode_classes()
  return re.compile(pattern.replace(r"\p{L}", L).replace(r"\p{N}", N).replace(r"\s", S).replace(r"\S", f"[^{S}]"))

# The regexes as the models' tokenizer.json write them; [\p{L}] inside a class becomes the ranges themselves.
PATTERNS = {
    "gpt-2": r"'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}]+| ?[\p{N}]+| ?[^\s\p{L}\p{N}]+|[\s]+(?!\S)|[\s]+",
    "llama-bpe": r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}]+|[\p{N}]{1,3}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|[\s]*[\r\n]+|[\s]+(?!\S)|[\s]+",
    "qwen2": r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}]+|[\p{N}]|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|[\s]*[\r\n]+|[\s]+(?!\S)|[\s]+",
}
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>"]

class ReferenceBpe:
  """Byte-level BPE from its definition: specials cut out, the pre-split regex, bytes as GPT-2's characters, then
  encoder.py's loop (merge every occurrence of the lowest-ranked pair, repeat)."""
  def __init__(self, pre, merges, vocab):
    self.regex, self.ranks, self.vocab = pre_split_regex(PATTERNS[pre]), {m: i for i, m in enumerate(merges)}, vocab
    self.ignore_merges = pre == "llama-bpe"  # LLaMA 3's tokenizer.json: a word that is a token stays whole
    self.byte_char = bytes_to_unicode()

  def words(self, text: str):
    return self.regex.findall(text)

  def bpe(self, word):
    w = list(word)
    while len(w) > 1:
      pairs = [(self.ranks.get((a, b), float("inf")), (a, b)) for a, b in zip(w, w[1:])]
      rank, best = min(pairs)
      if rank == float("inf"): break
      out, i = [], 0
      while i < len(w):
        if i + 1 < len(w) and (w[i], w[i + 1]) == best: out.append(w[i] + w[i + 1]); i += 2
        else: out.append(w[i]); i += 1
      w = out
    return w

  def encode(self, data: bytes):
    text = data.decode("utf-8", "surrogateescape")  # bytes that are not UTF-8 become lone surrogates (not L/N/\s)
    ids = []
    for part in re.split("(" + "|".join(map(re.escape, SPECIALS)) + ")", text):
      if part in SPECIALS: ids.append(self.vocab[part]); continue
      for word in self.words(part):
        chars = "".join(self.byte_char[b] for b in word.encode("utf-8", "surrogateescape"))
        pieces = [chars] if self.ignore_merges and chars in self.vocab else self.bpe(chars)
        ids += [self.vocab[p] for p in pieces]
    return ids

def learn_merges(words_bytes, byte_char, rounds):
  """Merges learned by counting: the most frequent adjacent pair each round (ties: the first seen)."""
  frequency = {}
  for w in words_bytes: frequency[w] = frequency.get(w, 0) + 1
  words = [[byte_char[b] for b in w] for w in frequency]
  merges = []
  for _ in range(rounds):
    counts = {}
    for w, f in zip(words, frequency.values()):
      for pair in zip(w, w[1:]): counts[pair] = counts.get(pair, 0) + f
    if not counts: break
    best = max(counts, key=counts.get)
    merges.append(best)
    for k, w in enumerate(words):
      out, i = [], 0
      while i < len(w):
        if i + 1 < len(w) and (w[i], w[i + 1]) == best: out.append(w[i] + w[i + 1]); i += 2
        else: out.append(w[i]); i += 1
      words[k] = out
  return merges

BPE_SAMPLES = [s.encode() for s in SAMPLES] + [
    b"I'M HERE, YOU'LL SEE; we'd've", b"\xff\xfe invalid \x80 bytes \xe6\x9d",
    b"\xc0\xaf overlong \xed\xa0\x80 surrogate",
    "<|begin_of_text|>Hello<|end_of_text|> after".encode(), b"12345678 1 22 333 4444", b"x.\n\ny \r\n z  \n  ",
    "(hello)\tworld ½ ١٢٣".encode()]

@pytest.mark.parametrize("pre", ["gpt-2", "llama-bpe", "qwen2"])
def test_byte_level_bpe_matches_reference(pre):
  byte_char = bytes_to_unicode()
  reference_split = pre_split_regex(PATTERNS[pre])
  corpus = training_text(seed=3)
  merges = learn_merges([w.encode() for w in reference_split.findall(corpus)], byte_char, 300)
  tokens = list(dict.fromkeys([byte_char[b] for b in range(256)] + [a + b for a, b in merges])) + SPECIALS
  vocab = {t: i for i, t in enumerate(tokens)}
  types = [1] * (len(tokens) - 2) + [3, 3]
  tok = Tokenizer.from_vocab("gpt2", tokens, token_types=types, merges=[f"{a} {b}" for a, b in merges],
                             bos_id=vocab[SPECIALS[0]], eos_id=vocab[SPECIALS[1]], add_bos=True, pre=pre)
  ref = ReferenceBpe(pre, merges, vocab)
  rng = random.Random(4)
  lines = training_text(seed=6).split("\n")
  randoms = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 24))) for _ in range(100)]
  for data in BPE_SAMPLES + [l.encode() for l in rng.sample(lines, 60)] + randoms:
    expected = ref.encode(data)
    assert tok.encode(data, add_bos=False) == expected, data
    assert tok.encode(data) == [tok.bos] + expected, data
    # decode gives the bytes back (shown as str: bytes that are not UTF-8 as U+FFFD, as Python decodes them)
    assert tok.decode(tok.encode(data, add_bos=False)) == data.decode("utf-8", "replace"), data

def test_bad_data_is_a_clear_error():
  with pytest.raises(KilnError, match="vocabulary is empty"): Tokenizer.from_vocab("llama", [])
  with pytest.raises(KilnError, match='unknown tokenizer model "wordpiece"'): Tokenizer.from_vocab("wordpiece", ["a"])
  with pytest.raises(KilnError, match='names "zz", which is not a token'):
    Tokenizer.from_vocab("gpt2", ["a", "b", "ab"], merges=["a b", "a zz"])
  tok = Tokenizer.from_vocab("gpt2", ["a", "b", "ab"], merges=["a b"])
  assert tok.encode("abba") == [2, 1, 0] and tok.bos == -1
  with pytest.raises(KilnError, match="token id 3 is out of range for a vocabulary of 3 tokens"): tok.decode([0, 3])
