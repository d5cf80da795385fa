// Element types and training precisions.
#pragma once
#include <cstdint>
#include <string>

namespace xpusim {

enum class DType { fp32, fp16, bf16, int32, uint8 };

inline int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32: return 4;
    case DType::fp16: return 2;
    case DType::bf16: return 2;
    case DType::int32: return 4;
    case DType::uint8: return 1;
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
  }
  return "?";
}

// How a training step computes. Names follow the reference CSV's `precision` column.
//   fp32        everything fp32
//   tf32        fp32 storage, matmul/conv on TF32 tensor cores (A100+)
//   bf16        bf16 activations and matmul inputs, fp32 accumulation and master weights (TPU)
//   mixed_fp16  fp16 activations on tensor cores, fp32 master weights, loss scaling ("mixed")
//   mixed_bf16  bf16 activations on tensor cores, fp32 master weights
enum class Precision { fp32, tf32, bf16, mixed_fp16, mixed_bf16 };

// Accepts the CSV spellings ("mixed" = mixed_fp16). Returns false on unknown names.
bool parse_precision(const std::string& s, Precision& out);
const char* precision_name(Precision p);
// Storage type of activations (and of matmul/conv inputs) under a precision.
DType activation_dtype(Precision p);
// "fp32|tf32|bf16|mixed_fp16|mixed_bf16|mixed" for help texts.
const char* precision_choices();

}  // namespace xpusim
