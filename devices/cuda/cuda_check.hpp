// Error checking for the CUDA runtime, cuBLAS, cuDNN and NCCL: a failed call becomes an
// InternalError naming the call and the library's message (a bug or a broken driver, not
// bad input). Out of memory inside a library call becomes UnavailableError with the bytes
// free; our own allocations go through the caching pool, which also names the bytes asked.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

namespace xpusim::cuda {

void check(cudaError_t e, const char* call, const char* file, int line);
void check(cublasStatus_t e, const char* call, const char* file, int line);
void check(cudnnStatus_t e, const char* call, const char* file, int line);
void check(ncclResult_t e, const char* call, const char* file, int line);

}  // namespace xpusim::cuda

#define XPUSIM_CUDA(call) ::xpusim::cuda::check((call), #call, __FILE__, __LINE__)
