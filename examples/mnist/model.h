#pragma once
// tinygrad's beautiful_mnist CNN, shared by the training example and the training-step benchmark.
#include <kiln/kiln.h>

#include <string>

namespace mnist {

// tinygrad's beautiful_mnist model: 28x28 -> 24 -> 20 -> pool 10 -> 8 -> 6 -> pool 3; 64*3*3 = 576.
struct BeautifulMnist {
  kiln::nn::Conv2d l1{1, 32, 5}, l2{32, 32, 5};
  kiln::nn::BatchNorm bn1{32};
  kiln::nn::Conv2d l3{32, 64, 3}, l4{64, 64, 3};
  kiln::nn::BatchNorm bn2{64};
  kiln::nn::Linear l5{576, 10};

  kiln::Tensor operator()(const kiln::Tensor& x) const {
    kiln::Tensor h = bn1(l2(l1(x).relu()).relu()).max_pool2d(2);
    h = bn2(l4(l3(h).relu()).relu()).max_pool2d(2);
    return l5(h.flatten(1));
  }

  void collect(kiln::nn::StateDict& out, const std::string& prefix) const {
    l1.collect(out, prefix + "l1.");
    l2.collect(out, prefix + "l2.");
    bn1.collect(out, prefix + "bn1.");
    l3.collect(out, prefix + "l3.");
    l4.collect(out, prefix + "l4.");
    bn2.collect(out, prefix + "bn2.");
    l5.collect(out, prefix + "l5.");
  }
};

}  // namespace mnist
