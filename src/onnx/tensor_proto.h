#pragma once
// ONNX TensorProto <-> kiln Tensor, and ONNX element types <-> kiln dtypes.
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <optional>
#include <string>

#include "kiln/tensor.h"

namespace kiln::onnx {

// The kiln dtype of an ONNX TensorProto.DataType, nullopt where kiln has none (string, complex).
std::optional<DType> dtype_from_onnx(int data_type);
std::string onnx_type_name(int data_type);
// A tensor with the proto's values; external data is read relative to `folder`.
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& folder);
// A TensorProto file (as the backend tests' input_K.pb) parsed.
::onnx::TensorProto read_tensor_proto(const std::string& path);

}  // namespace kiln::onnx
