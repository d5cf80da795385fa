// Element types and training precisions.
#pragma once
#include <cstdint>
#include <string>

namespace xpusim {

// fp8: one byte, E4M3 or E5M2 (Micikevicius et al. 2022); the storage of fp8 GEMM operands.
enum class DType { fp32, fp16, bf16, int32, uint8, fp8 };

inline int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32: return 4;
    case DType::fp16: return 2;
    case DType::bf16: return 2;
    case DType::int32: return 4;
    case DType::uint8: return 1;
    case DType::fp8: return 1;
  }
  return 4;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::int32: return "int32";
    case DType::uint8: return "uint8";
    case DType::fp8: return "fp8";
  }
  return "?";
}

// How a training step computes. Names follow the reference CSV's `precision` column.
//   fp32        everything fp32
//   tf32        fp32 storage, matmul/conv on TF32 tensor cores (A100+)
//   bf16        bf16 activations and matmul inputs, fp32 accumulation and master weights (TPU)
//   mixed_fp16  fp16 activations on tensor cores, fp32 master weights, loss scaling ("mixed")
//   mixed_bf16  bf16 activations on tensor cores, fp32 master weights
//   fp8         mixed_bf16 with the GEMMs on fp8 tensor cores (Transformer Engine: fp8 GEMM
//               inputs, bf16 elsewhere, fp32 master weights); devices list it where their
//               architecture has fp8 tensor cores (Ada, Hopper and later)
enum class Precision { fp32, tf32, bf16, mixed_fp16, mixed_bf16, fp8 };

// Accepts the CSV spellings ("mixed" = mixed_fp16). Returns false on unknown names.
bool parse_precision(const std::string& s, Precision& out);
const char* precision_name(Precision p);
// Storage type of activations (and of matmul/conv inputs) under a precision.
DType activation_dtype(Precision p);
// Storage type of fp8-capable GEMM inputs under a precision: fp8 for Precision::fp8, else
// the activation type.
DType gemm_input_dtype(Precision p);
// "fp32|tf32|bf16|mixed_fp16|mixed_bf16|mixed|fp8" for help texts.
const char* precision_choices();

}  // namespace xpusim
