// The convolution unit of the Inception families (torchvision's BasicConv2d, TF-Slim's
// conv2d with batch norm): a bias-free convolution, batch norm and ReLU.
#pragma once
#include <string>

#include "models/builder.hpp"

namespace xpusim::zoo {

inline int conv_bn_relu(ModelBuilder& b, int x, int filters, int kh, int kw, int stride, int pad_h, int pad_w,
                        const std::string& name) {
  ConvArgs a;
  a.filters = filters;
  a.kernel_h = kh;
  a.kernel_w = kw;
  a.stride_h = a.stride_w = stride;
  a.pad_h = pad_h;
  a.pad_w = pad_w;
  int y = b.conv(x, a, name + ".conv");
  return b.relu(b.batch_norm(y, name + ".bn"), name + ".relu");
}

}  // namespace xpusim::zoo
