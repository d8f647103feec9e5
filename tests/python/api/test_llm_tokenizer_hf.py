"""kiln.llm.Tokenizer.from_hf (a Hugging Face tokenizer.json) against the same references as test_llm_tokenizer.py:
SentencePiece itself for a SentencePiece-style BPE, written as the `tokenizers` library's converter writes LLaMA's
tokenizer.json (merges of two pieces ranked by the merged piece's score), and the byte-level reference BPE over learned
merges for GPT-2, LLaMA 3 and Qwen2 files (their pre-tokenizers as those models' files write them). Encodings must be
equal to the references'."""
import json
import random
import pytest

from test_llm_tokenizer import (SAMPLES, BPE_SAMPLES, SPECIALS, ReferenceBpe, bytes_to_unicode, learn_merges,
                                pre_split_regex, training_text, PATTERNS, sentencepiece_model)  # noqa: F401 (fixture)
from kiln import KilnError
from kiln.llm import Tokenizer

SP = "\u2581"

def spm_tokenizer_json(sp):
  """LLaMA's tokenizer.json for a SentencePiece BPE model: every split of a piece into two pieces is a merge, ranked
  by the whole piece's score (best first), ties by the parts' ids; "▁" for spaces by the normalizer; byte fallback."""
  n = sp.get_piece_size()
  vocab = {sp.id_to_piece(i): i for i in range(n)}
  merges = []
  for piece, i in vocab.items():
    if sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i): continue
    parts = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
    merges += [(sp.get_score(i), vocab[l], vocab[r], l, r) for l, r in parts]
  merges.sort(key=lambda m: (-m[0], m[1], m[2]))
  added = [{"id": i, "content": sp.id_to_piece(i), "special": sp.is_control(i) or sp.is_unknown(i)}
           for i in range(n) if sp.is_control(i) or sp.is_unknown(i) or sp.id_to_piece(i) == "<|im|>"]
  return {"version": "1.0", "added_tokens": added,
          "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SP},
                                                             {"type": "Replace", "pattern": {"String": " "},
                                                              "content": SP}]},
          "pre_tokenizer": None, "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}]},
          "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True, "vocab": vocab,
                    "merges": [f"{l} {r}" for _, _, _, l, r in merges]}}

def write(folder, tokenizer, config=None):
  folder.mkdir(parents=True, exist_ok=True)
  (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
  if config is not None: (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
  return folder

def test_sentencepiece_style_json_encodes_as_sentencepiece(sentencepiece_model, tmp_path):
  sp = sentencepiece_model
  folder = write(tmp_path / "llama", spm_tokenizer_json(sp),
                 {"bos_token": {"content": "<s>"}, "eos_token": "</s>", "add_bos_token": True})
  tok = Tokenizer.from_hf(str(folder))
  assert (tok.bos, tok.eos, tok.vocab_size) == (sp.bos_id(), sp.eos_id(), sp.get_piece_size())
  rng = random.Random(7)
  lines = training_text(seed=8).split("\n")
  for text in SAMPLES + rng.sample(lines, 100):
    ids = sp.encode(text)
    assert tok.encode(text, add_bos=False) == ids, text
    assert tok.encode(text) == [sp.bos_id()] + ids, text
    assert tok.decode(ids) == text, text

# The pre-tokenizers of the models' own tokenizer.json files.
def split_then_bytes(regex):
  return {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
      {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}

PRE_TOKENIZERS = {
    "gpt-2": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "llama-bpe": split_then_bytes(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
                                  r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "qwen2": split_then_bytes(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                              r"\s*[\r\n]+|\s+(?!\S)|\s+"),
}

@pytest.mark.parametrize("pre", ["gpt-2", "llama-bpe", "qwen2"])
def test_byte_level_json_matches_reference(pre, tmp_path):
  byte_char = bytes_to_unicode()
  corpus = training_text(seed=3)
  merges = learn_merges([w.encode() for w in pre_split_regex(PATTERNS[pre]).findall(corpus)], byte_char, 300)
  tokens = list(dict.fromkeys([byte_char[b] for b in range(256)] + [a + b for a, b in merges]))
  vocab = {t: i for i, t in enumerate(tokens)}
  added = [{"id": len(tokens) + k, "content": s, "special": True} for k, s in enumerate(SPECIALS)]
  # newer files write merges as pairs; no tokenizer_config.json: the post-processor's template adds the BOS
  template = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": SPECIALS[0], "type_id": 0}},
                                                       {"Sequence": {"id": "A", "type_id": 0}}]}
  tj = {"added_tokens": added, "normalizer": None, "pre_tokenizer": PRE_TOKENIZERS[pre],
        "post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel"}, template]},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "byte_fallback": False, "ignore_merges": pre == "llama-bpe", "vocab": vocab,
                  "merges": [[a, b] for a, b in merges]}}
  tok = Tokenizer.from_hf(str(write(tmp_path / pre, tj) / "tokenizer.json"))
  vocab.update({s: len(tokens) + k for k, s in enumerate(SPECIALS)})
  ref = ReferenceBpe(pre, merges, vocab)
  assert tok.bos == vocab[SPECIALS[0]]
  rng = random.Random(9)
  lines = training_text(seed=10).split("\n")
  for data in BPE_SAMPLES + [l.encode() for l in rng.sample(lines, 60)]:
    expected = ref.encode(data)
    assert tok.encode(data, add_bos=False) == expected, data
    assert tok.encode(data) == [tok.bos] + expected, data

def test_bad_files_are_clear_errors(tmp_path):
  with pytest.raises(KilnError, match="cannot open"): Tokenizer.from_hf(str(tmp_path / "missing.json"))
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  with pytest.raises(KilnError, match="is not a JSON object"): Tokenizer.from_hf(str(bad))
  bad.write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"a": 0}}}))
  with pytest.raises(KilnError, match="kiln reads BPE models only"): Tokenizer.from_hf(str(bad))
  bad.write_text(json.dumps({"model": {"type": "BPE", "vocab": {"a": "zero"}, "byte_fallback": True}}))
  with pytest.raises(KilnError, match='vocab entry "a" has id "zero"'): Tokenizer.from_hf(str(bad))
  bad.write_text(json.dumps({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a"]]},
                             "pre_tokenizer": {"type": "ByteLevel"}}))
  with pytest.raises(KilnError, match="expected \"left right\""): Tokenizer.from_hf(str(bad))
  bad.write_text(json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}},
                             "pre_tokenizer": split_then_bytes(r"\w+|\s+")}))
  with pytest.raises(KilnError, match="Split regex is not one kiln knows"): Tokenizer.from_hf(str(bad))
  bad.write_text(json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}}}))
  with pytest.raises(KilnError, match="neither a byte-level nor a SentencePiece-style BPE"): Tokenizer.from_hf(str(bad))
