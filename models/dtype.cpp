#include "models/dtype.hpp"

namespace xpusim {

bool parse_precision(const std::string& s, Precision& out) {
  if (s == "fp32") out = Precision::fp32;
  else if (s == "tf32") out = Precision::tf32;
  else if (s == "bf16") out = Precision::bf16;
  else if (s == "mixed_fp16" || s == "mixed" || s == "fp16") out = Precision::mixed_fp16;
  else if (s == "mixed_bf16") out = Precision::mixed_bf16;
  else if (s == "fp8") out = Precision::fp8;
  else return false;
  return true;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::mixed_fp16: return "mixed_fp16";
    case Precision::mixed_bf16: return "mixed_bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

DType activation_dtype(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32: return DType::fp32;
    case Precision::bf16:
    case Precision::mixed_bf16:
    case Precision::fp8: return DType::bf16;  // fp8 is the GEMMs' input type only
    case Precision::mixed_fp16: return DType::fp16;
  }
  return DType::fp32;
}

DType gemm_input_dtype(Precision p) { return p == Precision::fp8 ? DType::fp8 : activation_dtype(p); }

const char* precision_choices() { return "fp32|tf32|bf16|mixed_fp16|mixed_bf16|mixed|fp8"; }

}  // namespace xpusim
