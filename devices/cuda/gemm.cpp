// Row-major GEMM through cublasGemmEx / cublasGemmStridedBatchedEx (see gemm.hpp for the transposition trick).
#include "devices/cuda/gemm.hpp"

#include "common/error.hpp"
#include "devices/cuda/cuda_check.hpp"

namespace xpusim::cuda {

namespace {
cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::fp32: return CUDA_R_32F;
    case DType::fp16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: throw InternalError(std::string("gemm: unsupported type ") + dtype_name(t));
  }
}
}  // namespace

void gemm(cublasHandle_t h, const GemmArgs& g, GemmMath math) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  // Column-major view: C^T[n,m] = op(B)^T[n,k] op(A)^T[k,m]; a row-major X with leading
  // dimension ld is the column-major X^T with the same ld.
  cublasOperation_t ob = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t oa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  // fp32 inputs: FMA or TF32; fp16/bf16 inputs: tensor cores accumulate in fp32 either way.
  cublasComputeType_t ct = math == GemmMath::tf32 && g.ab_type == DType::fp32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                               : CUBLAS_COMPUTE_32F;
  if (g.batch > 1) {
    // The column-major swap applies per product: B's stride goes first, as B does.
    XPUSIM_CUDA(cublasGemmStridedBatchedEx(
        h, ob, oa, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha, g.b,
        cuda_type(g.ab_type), static_cast<int>(g.ldb), static_cast<long long>(g.stride_b), g.a, cuda_type(g.ab_type),
        static_cast<int>(g.lda), static_cast<long long>(g.stride_a), &g.beta, g.c, cuda_type(g.c_type),
        static_cast<int>(g.ldc), static_cast<long long>(g.stride_c), static_cast<int>(g.batch), ct,
        CUBLAS_GEMM_DEFAULT));
    return;
  }
  XPUSIM_CUDA(cublasGemmEx(h, ob, oa, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha,
                           g.b, cuda_type(g.ab_type), static_cast<int>(g.ldb), g.a, cuda_type(g.ab_type),
                           static_cast<int>(g.lda), &g.beta, g.c, cuda_type(g.c_type), static_cast<int>(g.ldc), ct,
                           CUBLAS_GEMM_DEFAULT));
}

}  // namespace xpusim::cuda
