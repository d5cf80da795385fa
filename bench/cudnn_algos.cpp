// Times every cuDNN algorithm (cudnnFind*AlgorithmEx) for the distinct convolution layers of
// the studies' CIFAR-10 CNNs (cnn10 and WRN-28-10, study 5) and a few ResNet-50 layers, in
// fp32 NCHW without TF32 (2019 Turing had none): forward, backward-data and backward-filter.
// Question it answers (docs/conclusions.md, claim 5.14): how much of the Winograd / FFT gain
// over implicit GEMM each layer shape gets, i.e. whether cnn10's 8x8 and 16x16 layers gain what
// WRN-28-10's 32x32 layers gain. A measurement on the lent GPU, never fitted on.
// Build (no GPU needed): g++ -O2 -std=c++17 bench/cudnn_algos.cpp -I/usr/local/cuda/include
//   -L/usr/local/cuda/lib64 -lcudnn -lcudart -o cudnn_algos
// Run: ./cudnn_algos > algos.csv   (one line per layer x pass x algorithm)
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    auto s_ = (x);                                                                         \
    if (s_ != 0) { std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, (int)s_); std::exit(1); } \
  } while (0)

struct Layer {
  const char* model;
  const char* name;
  int n, c, hw, k, r, stride;
};

int main(int argc, char** argv) {
  int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const std::vector<Layer> layers = {
      {"cnn10", "conv1_3x64_32", batch, 3, 32, 64, 3, 1},
      {"cnn10", "conv_64x64_32", batch, 64, 32, 64, 3, 1},
      {"cnn10", "conv_64x128_16", batch, 64, 16, 128, 3, 1},
      {"cnn10", "conv_128x128_16", batch, 128, 16, 128, 3, 1},
      {"cnn10", "conv_128x256_8", batch, 128, 8, 256, 3, 1},
      {"cnn10", "conv_256x256_8", batch, 256, 8, 256, 3, 1},
      {"wrn28_10", "conv_16x160_32", batch, 16, 32, 160, 3, 1},
      {"wrn28_10", "conv_160x160_32", batch, 160, 32, 160, 3, 1},
      {"wrn28_10", "conv_160x320_32s2", batch, 160, 32, 320, 3, 2},
      {"wrn28_10", "conv_320x320_16", batch, 320, 16, 320, 3, 1},
      {"wrn28_10", "conv_320x640_16s2", batch, 320, 16, 640, 3, 2},
      {"wrn28_10", "conv_640x640_8", batch, 640, 8, 640, 3, 1},
      {"resnet50", "conv_64x64_56", 64, 64, 56, 64, 3, 1},
      {"resnet50", "conv_256x256_14", 64, 256, 14, 256, 3, 1},
  };
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t ws_cap = size_t(4) << 30;
  void* ws = nullptr;
  CK(cudaMalloc(&ws, ws_cap));
  std::printf("gpu,cudnn,model,layer,n,c,hw,k,r,stride,pass,algo,status,time_ms,workspace_bytes,direct_tflops\n");
  for (const auto& L : layers) {
    int pad = L.r / 2, ho = (L.hw + 2 * pad - L.r) / L.stride + 1;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    CK(cudnnCreateTensorDescriptor(&xd));
    CK(cudnnCreateTensorDescriptor(&yd));
    CK(cudnnCreateFilterDescriptor(&wd));
    CK(cudnnCreateConvolutionDescriptor(&cd));
    CK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, L.n, L.c, L.hw, L.hw));
    CK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, L.n, L.k, ho, ho));
    CK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, L.k, L.c, L.r, L.r));
    CK(cudnnSetConvolution2dDescriptor(cd, pad, pad, L.stride, L.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT));
    CK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));  // strict fp32: no TF32 tensor cores
    size_t xs = size_t(L.n) * L.c * L.hw * L.hw, ys = size_t(L.n) * L.k * ho * ho, wsz = size_t(L.k) * L.c * L.r * L.r;
    float *x, *y, *w;
    CK(cudaMalloc(&x, xs * 4));
    CK(cudaMalloc(&y, ys * 4));
    CK(cudaMalloc(&w, wsz * 4));
    CK(cudaMemset(x, 0, xs * 4));
    CK(cudaMemset(y, 0, ys * 4));
    CK(cudaMemset(w, 0, wsz * 4));
    double flops = 2.0 * L.n * L.k * ho * ho * double(L.c) * L.r * L.r;
    auto emit = [&](const char* pass, int algo, int status, float ms, size_t mem) {
      std::printf("\"%s\",%zu,%s,%s,%d,%d,%d,%d,%d,%d,%s,%d,%d,%.5f,%zu,%.3f\n", prop.name, cudnnGetVersion(), L.model,
                  L.name, L.n, L.c, L.hw, L.k, L.r, L.stride, pass, algo, status, ms, mem,
                  status == 0 && ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0);
    };
    int got = 0;
    // Each Find call runs every algorithm (a few times) and returns them sorted by time.
    for (int rep = 0; rep < 2; ++rep) {  // the first call warms the kernels up; keep the second
      cudnnConvolutionFwdAlgoPerf_t pf[16];
      CK(cudnnFindConvolutionForwardAlgorithmEx(h, xd, x, wd, w, cd, yd, y, 16, &got, pf, ws, ws_cap));
      if (rep == 1)
        for (int i = 0; i < got; ++i) emit("fwd", pf[i].algo, pf[i].status, pf[i].time, pf[i].memory);
      cudnnConvolutionBwdDataAlgoPerf_t pd[16];
      CK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, wd, w, yd, y, cd, xd, x, 16, &got, pd, ws, ws_cap));
      if (rep == 1)
        for (int i = 0; i < got; ++i) emit("bwd_data", pd[i].algo, pd[i].status, pd[i].time, pd[i].memory);
      cudnnConvolutionBwdFilterAlgoPerf_t pw[16];
      CK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, xd, x, yd, y, cd, wd, w, 16, &got, pw, ws, ws_cap));
      if (rep == 1)
        for (int i = 0; i < got; ++i) emit("bwd_filter", pw[i].algo, pw[i].status, pw[i].time, pw[i].memory);
    }
    std::fflush(stdout);
    cudaFree(x);
    cudaFree(y);
    cudaFree(w);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
  }
  cudaFree(ws);
  cudnnDestroy(h);
  return 0;
}
