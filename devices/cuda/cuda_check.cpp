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

// A library ran out of device memory for its own allocation (the pool covers ours): still a
// clear, non-crashing error with what the device has left.
[[noreturn]] void out_of_memory(const char* lib, const char* call) {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  throw UnavailableError(std::string("out of GPU memory in ") + lib + " (" + call + "): " + std::to_string(free_b) +
                         " bytes free of " + std::to_string(total_b) + "; try a smaller batch");
}
}  // namespace

void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    out_of_memory("CUDA", call);
  }
  if (e != cudaSuccess) fail("CUDA", cudaGetErrorString(e), call, file, line);
}

void check(cublasStatus_t e, const char* call, const char* file, int line) {
  if (e == CUBLAS_STATUS_ALLOC_FAILED) out_of_memory("cuBLAS", call);
  if (e != CUBLAS_STATUS_SUCCESS) fail("cuBLAS", cublasGetStatusString(e), call, file, line);
}

void check(cudnnStatus_t e, const char* call, const char* file, int line) {
  if (e != CUDNN_STATUS_SUCCESS) fail("cuDNN", cudnnGetErrorString(e), call, file, line);
}

void check(ncclResult_t e, const char* call, const char* file, int line) {
  if (e != ncclSuccess) fail("NCCL", ncclGetErrorString(e), call, file, line);
}

}  // namespace xpusim::cuda
