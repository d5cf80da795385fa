// Entry point of the GPU tests (ctest label `gpu`): without a usable CUDA device it prints
// why and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE), never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <cstdio>

int main(int argc, char** argv) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("SKIP: no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
