"""PyTorch reference values for kiln's transformer-training features (tests/test_training_reference.cpp).

Writes one safetensors file of float64 tensors (by hand: f64_safetensors.py):
  clip.<case>.*        torch.nn.utils.clip_grad_norm_: gradients before (g*) and after (out*), the norm, max_norm
  schedule.*           the learning rates of LambdaLR with linear warm-up then cosine decay, step by step
  adamw.*              torch.optim.AdamW with two parameter groups (decay, no decay), four steps whose
                       learning rate changes every step
  gpt.*                a tiny GPT (examples/gpt/model.h's architecture and names) in float64: weights
                       (float32 values), tokens, the mean cross-entropy and every weight's gradient

Usage: make_training_reference.py OUTPUT.safetensors. Exits 77 (ctest SKIP) without NumPy or torch.
"""
import math
import os
import sys

OUT = sys.argv[1]
if os.path.exists(OUT):
    os.remove(OUT)
try:
    import torch
    import torch.nn.functional as F
    from f64_safetensors import write_f64_safetensors
except ImportError as e:
    print(f"skipping: {e}")
    sys.exit(77)

torch.manual_seed(0)
tensors = {}


def rand(*shape, scale=1.0):
    # float32 values held in float64, so kiln (float32) and torch start from the same numbers
    return ((torch.rand(shape, dtype=torch.float64) * 2 - 1) * scale).float().double()


# ---- clip_grad_norm_
def clip_case(name, max_norm, scales):
    grads = [rand(*shape, scale=s) for shape, s in scales]
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    tensors[f"clip.{name}.max_norm"] = torch.tensor([max_norm], dtype=torch.float64)
    tensors[f"clip.{name}.norm"] = norm.reshape(1)
    for i, (g, p) in enumerate(zip(grads, params)):
        tensors[f"clip.{name}.g{i}"] = g
        tensors[f"clip.{name}.out{i}"] = p.grad


clip_case("active", 1.0, [((4, 3), 2.0), ((5,), 1.0), ((2, 2, 2), 3.0)])
clip_case("inactive", 100.0, [((4, 3), 2.0), ((5,), 1.0)])
clip_case("zero", 0.0, [((3, 3), 1.0)])

# ---- warm-up + cosine, as LambdaLR of a factor of the base rate
BASE, WARMUP, TOTAL, MIN = 0.5, 3, 10, 0.05


def factor(t):
    if t < WARMUP:
        return (t + 1) / WARMUP
    if t >= TOTAL:
        return MIN / BASE
    progress = (t - WARMUP) / (TOTAL - WARMUP)
    return (MIN + (BASE - MIN) * 0.5 * (1 + math.cos(math.pi * progress))) / BASE


opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=BASE)
sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
lrs = []
for _ in range(TOTAL + 3):
    lrs.append(opt.param_groups[0]["lr"])
    opt.step()
    sched.step()
tensors["schedule.params"] = torch.tensor([BASE, WARMUP, TOTAL, MIN], dtype=torch.float64)
tensors["schedule.lrs"] = torch.tensor(lrs, dtype=torch.float64)

# ---- AdamW with parameter groups
ADAMW_LRS = [0.125, 0.0625, 0.25, 0.03125]
shapes = {"w": (4, 3), "b": (3,), "e": (5, 2)}
p0 = {k: rand(*s) for k, s in shapes.items()}
params = {k: torch.nn.Parameter(v.clone()) for k, v in p0.items()}
adamw = torch.optim.AdamW([{"params": [params["w"], params["e"]], "weight_decay": 0.25},
                           {"params": [params["b"]], "weight_decay": 0.0}], lr=ADAMW_LRS[0], betas=(0.875, 0.9375),
                          eps=1e-8)
tensors["adamw.params"] = torch.tensor([0.875, 0.9375, 1e-8, 0.25], dtype=torch.float64)
tensors["adamw.lrs"] = torch.tensor(ADAMW_LRS, dtype=torch.float64)
for k in shapes:
    tensors[f"adamw.p0.{k}"] = p0[k]
for step, lr in enumerate(ADAMW_LRS, 1):
    for group in adamw.param_groups:
        group["lr"] = lr
    for k in shapes:
        g = rand(*shapes[k])
        params[k].grad = g.clone()
        tensors[f"adamw.g{step}.{k}"] = g
    adamw.step()
    for k in shapes:
        tensors[f"adamw.p{step}.{k}"] = params[k].detach().clone()

# ---- a tiny GPT: token + position embeddings, pre-norm blocks, causal attention, GELU MLP, tied head
V, T, L, H, C, B = 16, 8, 2, 2, 12, 2
weights = {"wte.weight": rand(V, C, scale=0.5), "wpe.weight": rand(T, C, scale=0.5),
           "ln_f.weight": 1 + rand(C, scale=0.1), "ln_f.bias": rand(C, scale=0.1)}
for i in range(L):
    p = f"h.{i}."
    for ln in ("ln_1", "ln_2"):
        weights[p + ln + ".weight"] = 1 + rand(C, scale=0.1)
        weights[p + ln + ".bias"] = rand(C, scale=0.1)
    for name, (fan_out, fan_in) in {"attn.c_attn": (3 * C, C), "attn.c_proj": (C, C), "mlp.c_fc": (4 * C, C),
                                    "mlp.c_proj": (C, 4 * C)}.items():
        weights[p + name + ".weight"] = rand(fan_out, fan_in, scale=fan_in ** -0.5)
        weights[p + name + ".bias"] = rand(fan_out, scale=0.1)
leaves = {k: v.clone().requires_grad_() for k, v in weights.items()}
idx = torch.randint(0, V, (B, T))
targets = torch.randint(0, V, (B, T))


def gpt_loss(w, idx, targets):
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(L):
        p = f"h.{i}."
        h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5)
        q, k, v = F.linear(h, w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]).split(C, dim=2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1) / math.sqrt(C // H)).masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])
        h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5)
        h = F.gelu(F.linear(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]), approximate="tanh")
        x = x + F.linear(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
    logits = x @ w["wte.weight"].T
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


loss = gpt_loss(leaves, idx, targets)
loss.backward()
tensors["gpt.config"] = torch.tensor([V, T, L, H, C], dtype=torch.float64)
tensors["gpt.idx"] = idx.double()
tensors["gpt.targets"] = targets.double()
tensors["gpt.loss"] = loss.detach().reshape(1)
for k, v in weights.items():
    tensors["gpt.model." + k] = v
    tensors["gpt.grad." + k] = leaves[k].grad

write_f64_safetensors(tensors, OUT)
