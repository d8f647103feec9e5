#pragma once
// Datasets as tensors, like tinygrad's nn.datasets: the idx format (MNIST's) and Fashion-MNIST.
// Every failure (missing or malformed file, missing dataset) throws kiln::Error naming the file.
#include <string>

#include "kiln/tensor.h"

namespace kiln::nn::datasets {

// An idx file, plain or gzip-compressed (told apart by content, not by name). The header's type
// byte gives the dtype (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64)
// and its sizes the shape; the big-endian data is converted to host order.
Tensor load_idx(const std::string& path);

// As tinygrad's nn.datasets.mnist: images uint8 of shape (N, 1, 28, 28), labels uint8 of shape (N,).
struct Mnist {
  Tensor X_train, Y_train, X_test, Y_test;
};

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST from `dir`, holding train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each plain or with ".gz". An empty `dir` means
// $KILN_FASHION_MNIST if set, else kDebianFashionMnistDir.
Mnist fashion_mnist(const std::string& dir = "");

}  // namespace kiln::nn::datasets
