"""Language models of the LLaMA family: kiln.llm.

Tokenizer: text <-> token ids, from the vocabulary a GGUF file stores under tokenizer.ggml.*
(`Tokenizer.from_gguf(path)`), from a Hugging Face tokenizer.json (`Tokenizer.from_hf(path)`: the file or its folder), or those fields given as `Tokenizer.from_vocab(model, tokens, scores, token_types, merges, bos_id, eos_id, unknown_id, add_bos,
add_space_prefix, pre)`); `.encode(text, add_bos=True)` takes str or bytes, `.decode(ids)` gives str, `.bos`, `.eos`,
`.vocab_size`.

Model: a LLaMA-family decoder (LLaMA, Mistral, Qwen2, Qwen3) with its KV cache. `Model.from_safetensors(folder)`
reads a Hugging Face folder (config.json and *.safetensors), `Model.from_gguf(path)` a llama.cpp GGUF file (weights
kept in their stored type, F32/F16/BF16 or quantized); `model(tokens, start_pos)` gives the (B, T, vocab)
logits of tokens (B, T) at positions start_pos.. and fills the cache; `model.generate(ids, max_tokens=16,
temperature=0.0, top_k=0, top_p=1.0, seed=0)` returns the new token ids; `model.reset()` empties the cache."""
from __future__ import annotations
from typing import Callable
from kiln._core import _kiln
from kiln.dtype import dtypes
from kiln.tensor import Tensor

Tokenizer = _kiln.Tokenizer
Tokenizer.__module__ = "kiln.llm"

class Model:
  def __init__(self, core: _kiln.LlmModel): self._m = core

  @staticmethod
  def from_safetensors(folder) -> Model: return Model(_kiln.LlmModel.from_safetensors(str(folder)))

  @staticmethod
  def from_gguf(path) -> Model: return Model(_kiln.LlmModel.from_gguf(str(path)))

  def __call__(self, tokens, start_pos: int = 0) -> Tensor:
    t = tokens if isinstance(tokens, Tensor) else Tensor(tokens, dtype=dtypes.int32)
    return Tensor._wrap(self._m.forward(t._t, start_pos))

  def generate(self, ids: list[int], max_tokens: int = 16, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
               seed: int = 0, min_p: float = 0.0, repeat_penalty: float = 1.0,
               on_token: Callable[[int], bool] | None = None) -> list[int]:
    """Greedy at temperature 0; stops at an end-of-sequence token or when on_token returns False."""
    keep_going = None if on_token is None else (lambda t: on_token(t) is not False)  # a None return goes on
    return self._m.generate(list(ids), max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, keep_going)

  def reset(self): self._m.reset()

  @property
  def vocab_size(self) -> int: return self._m.vocab_size
  @property
  def max_context(self) -> int: return self._m.max_context
  @property
  def eos_ids(self) -> list[int]: return self._m.eos_ids

__all__ = ["Model", "Tokenizer"]
