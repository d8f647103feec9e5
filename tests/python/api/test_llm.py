"""kiln.llm.Model against PyTorch: a tiny random-weight model written by hand from Hugging Face's
LlamaForCausalLM / Qwen2ForCausalLM math (rotate_half rotary embeddings with the config's scaling,
grouped-query attention through repeat_kv, SwiGLU, float32 RMSNorm), saved as config.json +
safetensors. Logits of a prefill and of decode steps agree within rtol 1e-4 (atol 1e-4 of the
largest logit: float32 sums in another order); greedy generation follows PyTorch's argmax. The same models
written as llama.cpp GGUF files (F32, F16, Q8_0; q/k permuted as its converter does) load through
Model.from_gguf and match PyTorch over the weights the file decodes to."""
import json
import math
import struct
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from kiln import KilnError, Tensor  # noqa: E402
from kiln.llm import Model  # noqa: E402

BASE = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, intermediate_size=48, vocab_size=37,
            max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
            hidden_act="silu", eos_token_id=2, bos_token_id=1)

def random_weights(cfg, seed=0):
  g = torch.Generator().manual_seed(seed)
  dim, hd = cfg["hidden_size"], cfg["hidden_size"] // cfg["num_attention_heads"]
  q, kv, hidden, vocab = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd, cfg["intermediate_size"], cfg["vocab_size"]
  def r(*shape, scale=0.3, offset=0.0): return offset + scale * torch.randn(*shape, generator=g)
  w = {"model.embed_tokens.weight": r(vocab, dim, scale=1.0), "model.norm.weight": r(dim, scale=0.1, offset=1.0)}
  for i in range(cfg["num_hidden_layers"]):
    p = f"model.layers.{i}."
    w |= {p + "input_layernorm.weight": r(dim, scale=0.1, offset=1.0), p + "post_attention_layernorm.weight": r(dim, scale=0.1, offset=1.0),
          p + "self_attn.q_proj.weight": r(q, dim), p + "self_attn.k_proj.weight": r(kv, dim),
          p + "self_attn.v_proj.weight": r(kv, dim), p + "self_attn.o_proj.weight": r(dim, q),
          p + "mlp.gate_proj.weight": r(hidden, dim), p + "mlp.up_proj.weight": r(hidden, dim), p + "mlp.down_proj.weight": r(dim, hidden)}
    if cfg["model_type"] == "qwen2":
      w |= {p + f"self_attn.{n}_proj.bias": r(size) for n, size in (("q", q), ("k", kv), ("v", kv))}
  if not cfg["tie_word_embeddings"]: w["lm_head.weight"] = r(vocab, dim)
  return w

def write_safetensors(path, tensors):
  """The safetensors format by hand (8-byte header length, JSON header, raw little-endian data)."""
  names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
  header, blobs, offset = {}, [], 0
  for name, t in tensors.items():
    data = t.contiguous().view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
    header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
  h = json.dumps(header).encode()
  with open(path, "wb") as f: f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

def save(folder, cfg, weights):
  (folder / "config.json").write_text(json.dumps(cfg))
  write_safetensors(folder / "model.safetensors", weights)
  return folder

# ---- the PyTorch reference, after transformers' modeling_llama.py
def inv_freq(cfg):
  hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
  f = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
  rs = cfg.get("rope_scaling")
  if rs and rs.get("rope_type", rs.get("type")) == "linear": f = f / rs["factor"]
  if rs and rs.get("rope_type", rs.get("type")) == "llama3":  # _compute_llama3_parameters
    factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    wavelen = 2 * torch.pi / f
    llama = torch.where(wavelen > old / low, f / factor, f)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * llama / factor + smooth * llama
    medium = ~(wavelen < old / high) * ~(wavelen > old / low)
    f = torch.where(medium, smoothed, llama)
  return f

def rotate_half(x):
  x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
  return torch.cat((-x2, x1), dim=-1)

def rms_norm(x, w, eps): return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

def torch_logits(cfg, w, ids):
  """Logits (B, T, vocab) of the whole sequence at once (no cache), float32."""
  ids = torch.tensor(ids)
  B, T = ids.shape
  H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
  hd, eps = cfg["hidden_size"] // H, cfg["rms_norm_eps"]
  freqs = torch.arange(T).float()[:, None] * inv_freq(cfg)[None, :]
  emb = torch.cat((freqs, freqs), dim=-1)
  cos, sin = emb.cos(), emb.sin()
  mask = torch.full((T, T), float("-inf")).triu(1)
  h = w["model.embed_tokens.weight"][ids]
  for i in range(cfg["num_hidden_layers"]):
    p = f"model.layers.{i}."
    def proj(x, n): return torch.nn.functional.linear(x, w[p + n + ".weight"], w.get(p + n + ".bias"))
    x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
    q = proj(x, "self_attn.q_proj").view(B, T, H, hd).transpose(1, 2)
    k = proj(x, "self_attn.k_proj").view(B, T, KV, hd).transpose(1, 2)
    v = proj(x, "self_attn.v_proj").view(B, T, KV, hd).transpose(1, 2)
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)  # repeat_kv
    att = torch.softmax(q @ k.transpose(2, 3) * hd ** -0.5 + mask, dim=-1, dtype=torch.float32)
    h = h + proj((att @ v).transpose(1, 2).reshape(B, T, H * hd), "self_attn.o_proj")
    x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
    h = h + proj(torch.nn.functional.silu(proj(x, "mlp.gate_proj")) * proj(x, "mlp.up_proj"), "mlp.down_proj")
  head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
  return torch.nn.functional.linear(rms_norm(h, w["model.norm.weight"], eps), head).numpy()

def assert_close(got, want):
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())

def check_prefill_and_decode(tmp_path, cfg, dtype=torch.float32, prefill=6, steps=4):
  w = random_weights(cfg)
  stored = {n: t.to(dtype) for n, t in w.items()}
  m = Model.from_safetensors(save(tmp_path, cfg, stored))
  ref_w = {n: t.float() for n, t in stored.items()}  # the same rounded weights, upcast
  ids = [[(7 * i + 3) % cfg["vocab_size"] for i in range(prefill + steps)]]
  want = torch_logits(cfg, ref_w, ids)
  assert_close(m([ids[0][:prefill]], 0).numpy(), want[:, :prefill])
  for t in range(prefill, prefill + steps):
    out = m([[ids[0][t]]], t).numpy()
    assert out.shape == (1, 1, cfg["vocab_size"])
    assert_close(out, want[:, t : t + 1])

def test_llama_gqa_float32(tmp_path): check_prefill_and_decode(tmp_path, BASE)

def test_llama3_rope_scaling(tmp_path):
  cfg = BASE | dict(rope_theta=500000.0, rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                             high_freq_factor=4.0, original_max_position_embeddings=16))
  check_prefill_and_decode(tmp_path, cfg)

def test_linear_rope_scaling(tmp_path): check_prefill_and_decode(tmp_path, BASE | dict(rope_scaling=dict(type="linear", factor=2.0)))

def test_qwen2_biases_tied_embeddings(tmp_path):
  check_prefill_and_decode(tmp_path, BASE | dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], tie_word_embeddings=True,
                                                 rope_theta=1000000.0))

def test_float16_weights(tmp_path): check_prefill_and_decode(tmp_path, BASE, dtype=torch.float16)

def test_bfloat16_weights(tmp_path): check_prefill_and_decode(tmp_path, BASE, dtype=torch.bfloat16)

def test_batch_of_two(tmp_path):
  w = random_weights(BASE)
  m = Model.from_safetensors(save(tmp_path, BASE, w))
  ids = [[5, 9, 13, 4], [8, 1, 30, 22]]
  assert_close(m(Tensor(np.array(ids, dtype=np.int32)), 0).numpy(), torch_logits(BASE, w, ids))

def test_greedy_generation_follows_torch(tmp_path):
  w = random_weights(BASE)
  m = Model.from_safetensors(save(tmp_path, BASE, w))
  prompt, seq, want = [1, 17, 4, 29], [1, 17, 4, 29], []
  for _ in range(8):
    nxt = int(torch_logits(BASE, w, [seq])[0, -1].argmax())
    want.append(nxt)
    seq.append(nxt)
    if nxt == BASE["eos_token_id"]: break
  seen = []
  assert m.generate(prompt, max_tokens=8, on_token=seen.append) == want
  assert seen == want
  # sampling with a seed repeats itself; a fresh generate starts from an empty cache
  a = m.generate(prompt, max_tokens=8, temperature=0.8, top_k=10, top_p=0.9, seed=3)
  assert m.generate(prompt, max_tokens=8, temperature=0.8, top_k=10, top_p=0.9, seed=3) == a
  assert all(0 <= t < BASE["vocab_size"] for t in a)

def test_errors(tmp_path):
  save(tmp_path, BASE | dict(model_type="gpt2", architectures=["GPT2LMHeadModel"]), random_weights(BASE))
  with pytest.raises(KilnError, match="model_type of llama, mistral, qwen2 or qwen3"): Model.from_safetensors(tmp_path)
  save(tmp_path, BASE, random_weights(BASE))
  m = Model.from_safetensors(tmp_path)
  with pytest.raises(KilnError, match="outside the vocabulary"): m([[37]], 0)
  with pytest.raises(KilnError, match="at least one token"): m.generate([])

# ---- GGUF files, written here byte by byte as llama.cpp's convert_hf_to_gguf.py lays a model out
GGUF_ROLES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}

def gguf_name(hf):
  fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
  if hf in fixed: return fixed[hf]
  layer, rest = hf.removeprefix("model.layers.").split(".", 1)
  role, kind = rest.rsplit(".", 1)
  return f"blk.{layer}.{GGUF_ROLES[role]}.{kind}"

def permute(w, n_head, n_head_kv):
  """The converter's LlamaModel.permute: q/k rows reordered for ggml's pair-wise rope."""
  if n_head_kv is not None and n_head != n_head_kv: n_head = n_head_kv
  return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

def q8_0(w):
  """ggml's Q8_0 blocks of w's rows (32 values: an fp16 scale amax / 127, then 32 int8) and the values they decode to."""
  x = w.numpy().astype(np.float32).reshape(-1, 32)
  d = np.abs(x).max(1, keepdims=True) / 127
  q = np.trunc(x / np.where(d == 0, 1, d) + np.copysign(0.5, x)).astype(np.int8)  # roundf: half away from zero
  d16 = d.astype(np.float16)
  blocks = np.concatenate([d16.view(np.uint8), q.view(np.uint8)], axis=1).tobytes()
  return blocks, torch.from_numpy((q.astype(np.float32) * d16.astype(np.float32)).reshape(w.shape))

GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8

def encode(w, ggml_type):
  """(bytes as stored, the float32 values they decode to)"""
  if ggml_type == GGML_Q8_0 and w.ndim == 2: return q8_0(w)
  if ggml_type == GGML_F16 and w.ndim == 2: return w.half().numpy().tobytes(), w.half().float()
  return w.float().numpy().tobytes(), w.float()

def write_gguf(path, metadata, tensors):
  """GGUF v3: metadata (str, int as uint32, float as float32), tensor infos (dims innermost first), 32-aligned data."""
  def s(b): return struct.pack("<Q", len(b)) + b
  def value(v):
    if isinstance(v, str): return struct.pack("<I", 8) + s(v.encode())
    if isinstance(v, float): return struct.pack("<If", 6, v)
    return struct.pack("<II", 4, v)
  out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
  for k, v in metadata.items(): out += s(k.encode()) + value(v)
  data = b""
  for name, (ggml_type, shape, blob) in tensors.items():
    out += s(name.encode()) + struct.pack(f"<I{len(shape)}QIQ", len(shape), *reversed(shape), ggml_type, len(data))
    data += blob + b"\0" * (-len(blob) % 32)
  path.write_bytes(out + b"\0" * (-len(out) % 32) + data)
  return path

def gguf_metadata(cfg, arch):
  H, dim = cfg["num_attention_heads"], cfg["hidden_size"]
  m = {"general.architecture": arch, f"{arch}.context_length": cfg["max_position_embeddings"], f"{arch}.embedding_length": dim,
       f"{arch}.block_count": cfg["num_hidden_layers"], f"{arch}.feed_forward_length": cfg["intermediate_size"],
       f"{arch}.attention.head_count": H, f"{arch}.attention.head_count_kv": cfg["num_key_value_heads"],
       f"{arch}.attention.layer_norm_rms_epsilon": cfg["rms_norm_eps"], f"{arch}.rope.freq_base": cfg["rope_theta"],
       f"{arch}.rope.dimension_count": dim // H, "tokenizer.ggml.eos_token_id": cfg["eos_token_id"]}
  rs = cfg.get("rope_scaling")
  if rs and rs.get("type") == "linear": m |= {f"{arch}.rope.scaling.type": "linear", f"{arch}.rope.scaling.factor": rs["factor"]}
  return m

def llama3_rope_freqs(cfg):
  """The converter's rope_freqs.weight for llama3 scaling (LlamaModel.generate_extra_tensors)."""
  rs, dim = cfg["rope_scaling"], cfg["hidden_size"] // cfg["num_attention_heads"]
  freqs = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
  old, low, high, factor = rs["original_max_position_embeddings"], rs["low_freq_factor"], rs["high_freq_factor"], rs["factor"]
  factors = []
  for f in freqs.tolist():
    wavelen = 2 * math.pi / f
    if wavelen < old / high: factors.append(1.0)
    elif wavelen > old / low: factors.append(factor)
    else:
      smooth = (old / wavelen - low) / (high - low)
      factors.append(1 / ((1 - smooth) / factor + smooth))
  return torch.tensor(factors, dtype=torch.float32)

def save_gguf(path, cfg, w, ggml_type):
  """Writes w as llama.cpp would (q/k permuted for llama, 2-D tensors as ggml_type, the rest F32); returns the
  weights the file decodes to, in Hugging Face's layout (a row-wise code commutes with the row permutation)."""
  arch = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}[cfg["architectures"][0]]
  H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
  tensors, decoded = {}, {}
  for name, t in w.items():
    stored = t
    if arch == "llama" and name.endswith("q_proj.weight"): stored = permute(t, H, H)
    if arch == "llama" and name.endswith("k_proj.weight"): stored = permute(t, H, KV)
    blob, _ = encode(stored, ggml_type)
    _, decoded[name] = encode(t, ggml_type)
    kind = ggml_type if t.ndim == 2 else GGML_F32
    tensors[gguf_name(name)] = (kind, tuple(t.shape), blob)
  if (cfg.get("rope_scaling") or {}).get("rope_type") == "llama3":
    factors = llama3_rope_freqs(cfg)
    tensors["rope_freqs.weight"] = (GGML_F32, tuple(factors.shape), factors.numpy().tobytes())
  write_gguf(path, gguf_metadata(cfg, arch), tensors)
  return decoded

GGUF_BASE = BASE | dict(intermediate_size=64)  # Q8_0 blocks: every row a multiple of 32 values

def check_gguf(tmp_path, cfg, ggml_type, prefill=6, steps=4):
  decoded = save_gguf(tmp_path / "m.gguf", cfg, random_weights(cfg), ggml_type)
  m = Model.from_gguf(tmp_path / "m.gguf")
  assert (m.vocab_size, m.max_context, m.eos_ids) == (cfg["vocab_size"], cfg["max_position_embeddings"], [cfg["eos_token_id"]])
  ids = [[(7 * i + 3) % cfg["vocab_size"] for i in range(prefill + steps)]]
  want = torch_logits(cfg, decoded, ids)
  assert_close(m([ids[0][:prefill]], 0).numpy(), want[:, :prefill])
  for t in range(prefill, prefill + steps): assert_close(m([[ids[0][t]]], t).numpy(), want[:, t : t + 1])

def test_gguf_llama_f32(tmp_path): check_gguf(tmp_path, GGUF_BASE, GGML_F32)

def test_gguf_llama_f16(tmp_path): check_gguf(tmp_path, GGUF_BASE, GGML_F16)

def test_gguf_llama_q8_0(tmp_path): check_gguf(tmp_path, GGUF_BASE, GGML_Q8_0)

def test_gguf_llama3_rope_freqs(tmp_path):
  check_gguf(tmp_path, GGUF_BASE | dict(rope_theta=500000.0, rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                                         high_freq_factor=4.0, original_max_position_embeddings=16)), GGML_F32)

def test_gguf_linear_rope_scaling(tmp_path): check_gguf(tmp_path, GGUF_BASE | dict(rope_scaling=dict(type="linear", factor=2.0)), GGML_F32)

def test_gguf_qwen2_biases_tied_q8_0(tmp_path):
  check_gguf(tmp_path, GGUF_BASE | dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], tie_word_embeddings=True,
                                   rope_theta=1000000.0), GGML_Q8_0)

def test_gguf_errors(tmp_path):
  w = random_weights(BASE)
  save_gguf(tmp_path / "m.gguf", BASE, w, GGML_F32)
  data = (tmp_path / "m.gguf").read_bytes()
  (tmp_path / "gpt2.gguf").write_bytes(data.replace(b"\x05\0\0\0\0\0\0\0llama", b"\x05\0\0\0\0\0\0\0gpt-2", 1))
  with pytest.raises(KilnError, match='general.architecture: expected llama, mistral, qwen2 or qwen3, got "gpt-2"'):
    Model.from_gguf(tmp_path / "gpt2.gguf")
  (tmp_path / "renamed.gguf").write_bytes(data.replace(b"llama.block_count", b"llama.block_cou_t", 1))
  with pytest.raises(KilnError, match="missing metadata key llama.block_count"): Model.from_gguf(tmp_path / "renamed.gguf")
  with pytest.raises(KilnError, match="nowhere.gguf"): Model.from_gguf(tmp_path / "nowhere.gguf")
