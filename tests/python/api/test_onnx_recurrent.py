"""ONNX RNN, GRU and LSTM against PyTorch's layers (their weights reordered to ONNX's gate order) over
both directions, both layouts and sequence_lens (as pack_padded_sequence); clip and activations against
a float64 NumPy loop; Loop and Scan bodies against NumPy. rtol 1e-4, atol 1e-5 (float32)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper
try:
  from kiln.nn.onnx import OnnxRunner
except ImportError:
  pytest.skip("_kiln built without ONNX", allow_module_level=True)

SEQ, BATCH, INPUT, HIDDEN = 4, 3, 5, 6
# torch's gate blocks in ONNX's order: LSTM torch (i f g o) -> ONNX (i o f c), GRU torch (r z n) -> (z r h)
ORDER = {"RNN": [0], "GRU": [1, 0, 2], "LSTM": [0, 3, 1, 2]}

def save(tmp_path, nodes, inputs, outputs, inits=(), opset=14):
  graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
  path = str(tmp_path / "m.onnx")
  onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
  return OnnxRunner(path)

def onnx_weights(layer, op, dirs):
  gates = lambda w: np.concatenate([np.split(w, len(ORDER[op]))[k] for k in ORDER[op]])
  ws, rs, bs = [], [], []
  for sfx in ["", "_reverse"][:dirs]:
    p = {n: getattr(layer, n + sfx).detach().numpy()
         for n in ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]}
    ws.append(gates(p["weight_ih_l0"])), rs.append(gates(p["weight_hh_l0"]))
    bs.append(np.concatenate([gates(p["bias_ih_l0"]), gates(p["bias_hh_l0"])]))
  return np.stack(ws), np.stack(rs), np.stack(bs)

@pytest.mark.parametrize("op,bidirectional,layout,lengths", [
    ("RNN", True, 0, None), ("GRU", False, 1, None), ("GRU", True, 0, [4, 2, 3]),
    ("LSTM", False, 0, [3, 4, 1]), ("LSTM", True, 1, None)])
def test_recurrent_against_torch(tmp_path, op, bidirectional, layout, lengths):
  torch.manual_seed(0)
  layer = getattr(torch.nn, op)(INPUT, HIDDEN, bidirectional=bidirectional)
  dirs = 2 if bidirectional else 1
  w, r, b = onnx_weights(layer, op, dirs)
  x = np.random.default_rng(1).standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
  inits = [numpy_helper.from_array(v, n) for v, n in [(w, "W"), (r, "R"), (b, "B")]]
  if lengths: inits.append(numpy_helper.from_array(np.array(lengths, dtype=np.int32), "L"))
  attrs = {"hidden_size": HIDDEN, "layout": layout, "direction": "bidirectional" if bidirectional else "forward"}
  if op == "GRU": attrs["linear_before_reset"] = 1  # torch's GRU applies the reset gate after R
  node = helper.make_node(op, ["X", "W", "R", "B", "L" if lengths else ""], ["Y", "Y_h"], **attrs)
  x_in = x.transpose(1, 0, 2) if layout else x
  runner = save(tmp_path, [node], [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x_in.shape))],
                [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["Y", "Y_h"]], inits)
  out = runner({"X": x_in})
  with torch.no_grad():
    xt = torch.from_numpy(x)
    if lengths:
      packed = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lengths), enforce_sorted=False)
      y, state = layer(packed)
      y = torch.nn.utils.rnn.pad_packed_sequence(y, total_length=SEQ)[0]
    else:
      y, state = layer(xt)
  h = (state[0] if op == "LSTM" else state).numpy()                   # (dirs, batch, H)
  y = y.numpy().reshape(SEQ, BATCH, dirs, HIDDEN).transpose(0, 2, 1, 3)  # ONNX's (seq, dirs, batch, H)
  if layout: y, h = y.transpose(2, 0, 1, 3), h.transpose(1, 0, 2)
  np.testing.assert_allclose(out["Y"].numpy(), y, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(out["Y_h"].numpy(), h, rtol=1e-4, atol=1e-5)

def test_rnn_clip_and_activation_against_numpy(tmp_path):
  rng = np.random.default_rng(2)
  x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
  w = rng.standard_normal((1, HIDDEN, INPUT)).astype(np.float32)
  r = rng.standard_normal((1, HIDDEN, HIDDEN)).astype(np.float32) * 0.5
  node = helper.make_node("RNN", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=HIDDEN, clip=0.7, direction="reverse",
                          activations=["LeakyRelu"], activation_alpha=[0.3])
  runner = save(tmp_path, [node], [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
                [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["Y", "Y_h"]],
                [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")])
  out = runner({"X": x})
  h, ys = np.zeros((BATCH, HIDDEN)), [None] * SEQ
  for t in reversed(range(SEQ)):
    a = np.clip(x[t].astype(np.float64) @ w[0].T + h @ r[0].T, -0.7, 0.7)
    h = ys[t] = np.where(a > 0, a, 0.3 * a)
  np.testing.assert_allclose(out["Y"].numpy()[:, 0], np.stack(ys), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(out["Y_h"].numpy()[0], h, rtol=1e-4, atol=1e-5)

def test_loop_while_condition_from_body(tmp_path):
  # doubles x until its sum passes `limit` (an outer-scope value read inside the body); no trip count
  body = helper.make_graph(
      [helper.make_node("Add", ["x_in", "x_in"], ["x_out"]),
       helper.make_node("ReduceSum", ["x_out"], ["s"], keepdims=0),
       helper.make_node("Less", ["s", "limit"], ["cond_out"]), helper.make_node("Identity", ["s"], ["s_scan"])],
      "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
               helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
               helper.make_tensor_value_info("x_in", TensorProto.FLOAT, None)],
      [helper.make_tensor_value_info(n, t, None) for n, t in
       [("cond_out", TensorProto.BOOL), ("x_out", TensorProto.FLOAT), ("s_scan", TensorProto.FLOAT)]])
  loop = helper.make_node("Loop", ["", "go", "x"], ["x_final", "sums"], body=body)
  runner = save(tmp_path, [loop], [helper.make_tensor_value_info(n, t, None) for n, t in
                                   [("go", TensorProto.BOOL), ("x", TensorProto.FLOAT), ("limit", TensorProto.FLOAT)]],
                [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["x_final", "sums"]])
  x = np.array([0.5, 1.25, -0.25], dtype=np.float32)
  out = runner({"go": np.array(True), "x": x, "limit": np.array(40, dtype=np.float32)})
  want_x, sums = x.copy(), []
  while True:
    want_x = want_x * 2
    sums.append(want_x.sum())
    if not sums[-1] < 40: break
  np.testing.assert_allclose(out["x_final"].numpy(), want_x)
  np.testing.assert_allclose(out["sums"].numpy(), np.array(sums, dtype=np.float32))

def test_scan_reverse_directions_and_output_axis(tmp_path):
  # a running sum over x's axis 1 taken backwards, its steps stacked along output axis 1 in reverse
  body = helper.make_graph(
      [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]), helper.make_node("Identity", ["acc_out"], ["y_t"])],
      "body", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["acc_in", "x_t"]],
      [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["acc_out", "y_t"]])
  scan = helper.make_node("Scan", ["init", "x"], ["acc", "ys"], body=body, num_scan_inputs=1,
                          scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[-1],
                          scan_output_directions=[1])
  runner = save(tmp_path, [scan], [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["init", "x"]],
                [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["acc", "ys"]], opset=11)
  x = np.random.default_rng(3).standard_normal((2, 5)).astype(np.float32)
  init = np.array([1.0, -1.0], dtype=np.float32)
  out = runner({"init": init, "x": x})
  # step t adds x[:, 4 - t]; reversed output puts step t at position 4 - t: a suffix sum
  want = init[:, None] + np.cumsum(x[:, ::-1], axis=1)[:, ::-1]
  np.testing.assert_allclose(out["ys"].numpy(), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(out["acc"].numpy(), want[:, 0], rtol=1e-5, atol=1e-6)
