// Row-major GEMM on cuBLAS: C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C. cuBLAS is
// column-major, so a row-major C = A B is computed as the column-major C^T = B^T A^T
// (swap the operands, keep the transposes). A and B share one type; C may be fp32 when A
// and B are fp16/bf16 (weight gradients straight into the fp32 master gradient).
#pragma once
#include <cublas_v2.h>

#include <cstdint>

#include "models/dtype.hpp"

namespace xpusim::cuda {

// Which math cuBLAS may use: plain fp32 FMA, TF32 tensor cores, or fp16/bf16 tensor cores
// with fp32 accumulation (chosen from the operand type).
enum class GemmMath { fp32, tf32, tensor };

struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr; int64_t lda = 0;  // row-major leading dimensions (elements)
  const void* b = nullptr; int64_t ldb = 0;
  void* c = nullptr; int64_t ldc = 0;
  DType ab_type = DType::fp32;
  DType c_type = DType::fp32;
  float alpha = 1.f, beta = 0.f;
  // Strided batch (cublasGemmStridedBatchedEx): `batch` products, the i-th reading
  // a + i stride_a, b + i stride_b and writing c + i stride_c (strides in elements).
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

void gemm(cublasHandle_t h, const GemmArgs& g, GemmMath math);

}  // namespace xpusim::cuda
