"""PyTorch reference values for kiln's conv, pooling, norm, loss and optimizer tests.

Computes inputs, outputs and gradients with torch in float64 for a list of cases and writes them to
one safetensors file (written by hand: f64_safetensors.py), which tests/test_torch_reference.cpp
reads. Every case is a group of tensors named "<op>.<case>.<tensor>":
  params        the op's arguments, as float64 numbers in the order the C++ handler of <op> reads them
  x, w, b, ...  the inputs
  r             weights of the scalar loss sum(out * r) that the gradients are of
  out           the forward result
  grad.<input>  d sum(out * r) / d input

Usage: make_torch_reference.py OUTPUT.safetensors. Exits 77 (ctest SKIP) without NumPy or torch,
after removing OUTPUT so no stale file is left behind.
"""
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


def rand(*shape, lo=-1.0, hi=1.0):
    return torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo


def add_case(op, name, params, inputs, fn, differentiable=None):
    """Runs fn(**inputs), stores inputs, out and the gradients of sum(out * r) wrt `differentiable`."""
    prefix = f"{op}.{name}."
    differentiable = list(inputs) if differentiable is None else differentiable
    leaves = {k: v.clone().requires_grad_(k in differentiable) for k, v in inputs.items()}
    out = fn(**leaves)
    r = rand(*out.shape)
    (out * r).sum().backward()
    tensors[prefix + "params"] = torch.tensor([float(p) for p in params], dtype=torch.float64)
    for k, v in inputs.items():
        tensors[prefix + k] = v
        if k in differentiable:
            tensors[prefix + "grad." + k] = leaves[k].grad
    tensors[prefix + "r"] = r
    tensors[prefix + "out"] = out.detach()


# ---- conv2d: params stride, padding, dilation, groups
for name, xs, ws, bias, (s, p, d, g) in [
    ("basic", (2, 3, 6, 5), (4, 3, 3, 3), True, (1, 0, 1, 1)),
    ("stride2_pad1", (1, 2, 7, 7), (3, 2, 3, 3), True, (2, 1, 1, 1)),
    ("dilation2", (1, 2, 7, 6), (2, 2, 3, 2), False, (1, 2, 2, 1)),
    ("groups2", (2, 4, 5, 5), (6, 2, 3, 3), True, (2, 1, 1, 2)),
    ("depthwise", (1, 3, 5, 6), (3, 1, 3, 3), True, (1, 1, 1, 3)),
]:
    inputs = {"x": rand(*xs), "w": rand(*ws)}
    if bias:
        inputs["b"] = rand(ws[0])
    add_case("conv2d", name, (s, p, d, g), inputs,
             lambda x, w, b=None, s=s, p=p, d=d, g=g: F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g))

# ---- conv_transpose2d: params stride, padding, output_padding, dilation, groups
for name, xs, ws, bias, (s, p, op, d, g) in [
    ("basic", (1, 2, 4, 3), (2, 3, 3, 3), True, (1, 0, 0, 1, 1)),
    ("stride2_outpad1", (2, 2, 3, 4), (2, 2, 3, 3), True, (2, 1, 1, 1, 1)),
    ("groups2_dilation2", (1, 4, 3, 3), (4, 2, 2, 2), False, (2, 0, 1, 2, 2)),
]:
    inputs = {"x": rand(*xs), "w": rand(*ws)}
    if bias:
        inputs["b"] = rand(ws[1] * g)
    add_case("conv_transpose2d", name, (s, p, op, d, g), inputs,
             lambda x, w, b=None, s=s, p=p, op=op, d=d, g=g:
             F.conv_transpose2d(x, w, b, stride=s, padding=p, output_padding=op, groups=g, dilation=d))

# ---- max_pool2d: params kernel, stride, padding, dilation, ceil_mode
for name, xs, (k, s, p, d, c) in [
    ("k2", (2, 2, 6, 7), (2, 2, 0, 1, 0)),
    ("k3_s2_p1", (1, 2, 7, 6), (3, 2, 1, 1, 0)),
    ("k3_s2_ceil", (1, 1, 8, 7), (3, 2, 0, 1, 1)),
    ("k3_s1_d2_p1", (1, 1, 7, 7), (3, 1, 1, 2, 0)),
    ("k2_s2_p1_ceil", (1, 1, 5, 6), (2, 2, 1, 1, 1)),
]:
    add_case("max_pool2d", name, (k, s, p, d, c), {"x": rand(*xs)},
             lambda x, k=k, s=s, p=p, d=d, c=c: F.max_pool2d(x, k, s, p, d, ceil_mode=bool(c)))

# ---- avg_pool2d: params kernel, stride, padding, ceil_mode, count_include_pad
for name, xs, (k, s, p, c, i) in [
    ("k2", (2, 2, 6, 7), (2, 2, 0, 0, 1)),
    ("k3_s2_p1", (1, 2, 7, 6), (3, 2, 1, 0, 1)),
    ("k3_s2_p1_exclude", (1, 2, 7, 6), (3, 2, 1, 0, 0)),
    ("k3_s2_ceil", (1, 1, 8, 7), (3, 2, 0, 1, 1)),
    ("k3_s2_p1_ceil_exclude", (1, 1, 6, 7), (3, 2, 1, 1, 0)),
    ("k2_s2_p1_ceil_include", (1, 1, 5, 6), (2, 2, 1, 1, 1)),
]:
    add_case("avg_pool2d", name, (k, s, p, c, i), {"x": rand(*xs)},
             lambda x, k=k, s=s, p=p, c=c, i=i: F.avg_pool2d(x, k, s, p, ceil_mode=bool(c), count_include_pad=bool(i)))

# ---- norms: batch statistics (training), layer norm over the last dims, group norm
add_case("batch_norm", "training", (1e-5,), {"x": rand(3, 4, 2, 3), "w": rand(4), "b": rand(4)},
         lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-5))
add_case("layer_norm", "last", (1e-5, 1), {"x": rand(3, 2, 5), "w": rand(5), "b": rand(5)},
         lambda x, w, b: F.layer_norm(x, (5,), w, b, eps=1e-5))
add_case("layer_norm", "last2", (1e-5, 2), {"x": rand(3, 2, 5), "w": rand(2, 5), "b": rand(2, 5)},
         lambda x, w, b: F.layer_norm(x, (2, 5), w, b, eps=1e-5))
add_case("group_norm", "g2", (2, 1e-5), {"x": rand(2, 4, 3, 2), "w": rand(4), "b": rand(4)},
         lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-5))

# ---- losses (targets stored as float64; the C++ side casts class indices to int32)
labels = torch.tensor([0, 4, 2, 2, 3, 1], dtype=torch.float64)
# sparse_categorical_crossentropy: params ignore_index, label_smoothing
for name, ignore, smooth in [("plain", -1, 0.0), ("ignore2", 2, 0.0), ("smooth", -1, 0.1), ("ignore2_smooth", 2, 0.2)]:
    add_case("sparse_categorical_crossentropy", name, (ignore, smooth), {"x": rand(6, 5, lo=-2, hi=2), "target": labels},
             lambda x, target, ignore=ignore, smooth=smooth:
             F.cross_entropy(x, target.long(), ignore_index=ignore if ignore >= 0 else -100, label_smoothing=smooth),
             differentiable=["x"])
# cross_entropy: params label_smoothing, target_is_indices
add_case("cross_entropy", "indices", (0.0, 1), {"x": rand(6, 5, lo=-2, hi=2), "target": labels},
         lambda x, target: F.cross_entropy(x, target.long()), differentiable=["x"])
add_case("cross_entropy", "indices_spatial_smooth", (0.15, 1),
         {"x": rand(2, 3, 2, 2, lo=-2, hi=2), "target": torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, 1]]], dtype=torch.float64)},
         lambda x, target: F.cross_entropy(x, target.long(), label_smoothing=0.15), differentiable=["x"])
add_case("cross_entropy", "probabilities_smooth", (0.1, 0),
         {"x": rand(4, 5, lo=-2, hi=2), "target": torch.softmax(rand(4, 5), 1)},
         lambda x, target: F.cross_entropy(x, target, label_smoothing=0.1), differentiable=["x"])
# nll_loss: params ignore_index
add_case("nll_loss", "ignore2", (2,), {"x": torch.log_softmax(rand(6, 5), 1), "target": labels},
         lambda x, target: F.nll_loss(x, target.long(), ignore_index=2), differentiable=["x"])
add_case("binary_crossentropy", "probs", (), {"x": rand(3, 4, lo=0.05, hi=0.95), "target": rand(3, 4, lo=0, hi=1)},
         lambda x, target: F.binary_cross_entropy(x, target))
add_case("binary_crossentropy_logits", "logits", (), {"x": rand(3, 4, lo=-4, hi=4), "target": rand(3, 4, lo=0, hi=1)},
         lambda x, target: F.binary_cross_entropy_with_logits(x, target))

# ---- nn.BatchNorm2d: two training steps (running statistics with momentum, unbiased variance),
# then eval mode on a third batch
bn = torch.nn.BatchNorm2d(3, eps=1e-5, momentum=0.1).double()
with torch.no_grad():
    bn.weight.copy_(rand(3))
    bn.bias.copy_(rand(3))
p = "batchnorm_layer.steps."
tensors[p + "weight"], tensors[p + "bias"] = bn.weight.detach().clone(), bn.bias.detach().clone()
bn.train()
for step in (1, 2):
    x = rand(4, 3, 2, 3) * step + step
    tensors[p + f"x{step}"] = x
    tensors[p + f"out{step}"] = bn(x).detach()
tensors[p + "running_mean"], tensors[p + "running_var"] = bn.running_mean.clone(), bn.running_var.clone()
bn.eval()
tensors[p + "x3"] = rand(2, 3, 2, 3)
tensors[p + "out3"] = bn(tensors[p + "x3"]).detach()


# ---- optimizers: three steps on the same parameters with given gradients
def optimizer_steps(name, make, params):
    p0 = rand(3, 4)
    param = torch.nn.Parameter(p0.clone())
    opt = make([param])
    prefix = f"{name}.steps."
    tensors[prefix + "params"] = torch.tensor([float(v) for v in params], dtype=torch.float64)
    tensors[prefix + "p0"] = p0
    for step in (1, 2, 3):
        g = rand(3, 4)
        param.grad = g.clone()
        opt.step()
        tensors[prefix + f"g{step}"] = g
        tensors[prefix + f"p{step}"] = param.detach().clone()


# SGD: params lr, momentum, weight_decay, nesterov
optimizer_steps("sgd", lambda ps: torch.optim.SGD(ps, lr=0.125, momentum=0.875, weight_decay=0.0625, nesterov=True),
                (0.125, 0.875, 0.0625, 1))
# Adam: params lr, b1, b2, eps
optimizer_steps("adam", lambda ps: torch.optim.Adam(ps, lr=0.125, betas=(0.875, 0.9375), eps=1e-8),
                (0.125, 0.875, 0.9375, 1e-8))

write_f64_safetensors(tensors, OUT)
