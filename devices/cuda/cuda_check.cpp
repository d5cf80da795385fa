// Error conversion for the CUDA libraries (see cuda_check.hpp).
#include "devices/cuda/cuda_check.hpp"

#include <string>

#include "common/error.hpp"

namespace xpusim::cuda {

namespace {
[[noreturn]] void fail(const char* lib, const std::string& msg, const char* call, const char* file, int line) {
  throw InternalError(std::string(lib) + " error: " + msg + " in " + call + " (" + file + ":" + std::to_string(line) +
                      ")");
}
}  // namespace

void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) fail("CUDA", cudaGetErrorString(e), call, file, line);
}

void check(cublasStatus_t e, const char* call, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS) fail("cuBLAS", cublasGetStatusString(e), call, file, line);
}

void check(cudnnStatus_t e, const char* call, const char* file, int line) {
  if (e != CUDNN_STATUS_SUCCESS) fail("cuDNN", cudnnGetErrorString(e), call, file, line);
}

void check(ncclResult_t e, const char* call, const char* file, int line) {
  if (e != ncclSuccess) fail("NCCL", ncclGetErrorString(e), call, file, line);
}

}  // namespace xpusim::cuda
