// Fashion-MNIST from the four idx files of a local directory (by default where Debian's
// dataset-fashion-mnist package puts them), shaped as tinygrad's nn.datasets.mnist returns them.
#include <filesystem>
#include <string>
#include <utility>

#include "kiln/error.h"
#include "kiln/ir/uop.h"
#include "kiln/nn/datasets.h"
#include "support/env.h"

namespace kiln::nn::datasets {
namespace {

constexpr int64_t kImageSide = 28;

std::filesystem::path dataset_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  std::string from_env = env::get_string("KILN_FASHION_MNIST");
  return from_env.empty() ? kDebianFashionMnistDir : from_env;
}

// `dir/name`, or `dir/name.gz`; neither means the dataset is not there, so say how to get it.
std::string find_file(const std::filesystem::path& dir, const std::string& name) {
  for (const std::filesystem::path& candidate : {dir / name, dir / (name + ".gz")}) {
    std::error_code ec;
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  }
  throw_error("fashion_mnist: no ", name, " or ", name, ".gz in ", dir.string(),
              ": install the dataset with `sudo apt-get install dataset-fashion-mnist`, or set KILN_FASHION_MNIST "
              "to a directory holding its four idx files");
}

// One split ("train" or "t10k"): images (N, 1, 28, 28) and labels (N,), both uint8.
std::pair<Tensor, Tensor> load_split(const std::filesystem::path& dir, const std::string& split) {
  std::string images_path = find_file(dir, split + "-images-idx3-ubyte");
  std::string labels_path = find_file(dir, split + "-labels-idx1-ubyte");
  Tensor images = load_idx(images_path), labels = load_idx(labels_path);
  const Shape& image_shape = images.shape();
  if (images.dtype() != dtypes::uint8 || image_shape.size() != 3 || image_shape[1] != kImageSide ||
      image_shape[2] != kImageSide)
    throw_error("fashion_mnist: ", images_path, ": expected uint8 images of shape (N, 28, 28), found ",
                images.dtype().name(), " of shape ", shape_to_string(image_shape));
  if (labels.dtype() != dtypes::uint8 || labels.ndim() != 1)
    throw_error("fashion_mnist: ", labels_path, ": expected uint8 labels of shape (N,), found ", labels.dtype().name(),
                " of shape ", shape_to_string(labels.shape()));
  int64_t count = image_shape[0];
  if (labels.shape()[0] != count)
    throw_error("fashion_mnist: image/label count mismatch: ", images_path, " has ", count, " images but ",
                labels_path, " has ", labels.shape()[0], " labels");
  return {images.reshape({count, 1, kImageSide, kImageSide}), labels};
}

}  // namespace

Mnist fashion_mnist(const std::string& dir) {
  std::filesystem::path where = dataset_dir(dir);
  auto [X_train, Y_train] = load_split(where, "train");
  auto [X_test, Y_test] = load_split(where, "t10k");
  return Mnist{X_train, Y_train, X_test, Y_test};
}

}  // namespace kiln::nn::datasets
