"""kiln.nn.onnx.OnnxRunner against NumPy: a model built with the onnx package's helpers, and a
backend test case with the outputs ONNX ships for it (rtol 1e-3, atol 1e-7, the backend runner's)."""
import os
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from kiln import KilnError, Tensor, dtypes
try:
  from kiln.nn.onnx import OnnxRunner
except ImportError:
  pytest.skip("_kiln built without ONNX", allow_module_level=True)

TESTDATA = "/usr/share/libonnx-testdata/data"

def gemm_relu_model(path):
  x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
  y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
  w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.5, "w")
  b = numpy_helper.from_array(np.array([0.1, -0.2, 0.3], dtype=np.float32), "b")
  nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])]
  graph = helper.make_graph(nodes, "g", [x], [y], [w, b])
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
  onnx.save(model, path)
  return numpy_helper.to_array(w), numpy_helper.to_array(b)

def test_gemm_relu_against_numpy(tmp_path):
  w, b = gemm_relu_model(str(tmp_path / "m.onnx"))
  runner = OnnxRunner(tmp_path / "m.onnx")
  assert [(v.name, v.dtype, v.shape) for v in runner.inputs] == [("x", dtypes.float32, ["batch", "4"])]
  x = np.random.default_rng(0).standard_normal((5, 4))  # float64: converted to the declared float32
  out = runner({"x": x})
  assert list(out) == ["y"] and isinstance(out["y"], Tensor)
  np.testing.assert_allclose(out["y"].numpy(), np.maximum(x.astype(np.float32) @ w.T + b, 0), rtol=1e-5, atol=1e-6)

def test_backend_case_conv():
  case = os.path.join(TESTDATA, "node/test_conv_with_strides_padding")
  if not os.path.exists(case): pytest.skip("libonnx-testdata is not installed")
  runner = OnnxRunner(os.path.join(case, "model.onnx"))
  data = os.path.join(case, "test_data_set_0")
  read = lambda name: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, name)))
  inputs = {v.name: Tensor(read(f"input_{k}.pb")) for k, v in enumerate(runner.inputs)}
  got = runner(inputs)[runner.outputs[0].name].numpy()
  np.testing.assert_allclose(got, read("output_0.pb"), rtol=1e-3, atol=1e-7)

def test_unsupported_op_fails_when_loaded(tmp_path):
  x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
  node = helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")
  graph = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
  onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "bad.onnx"))
  with pytest.raises(KilnError, match=r"'mystery' \(op NoSuchOp, opset 13\): this op is not supported"):
    OnnxRunner(tmp_path / "bad.onnx")
