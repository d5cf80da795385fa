// GEMM operand alignment on the tensor cores (every analytical GPU: kernel model and roofline).
//
// cuBLAS's fast tensor-core kernels move their operands in 16-byte vectors (cp.async / TMA), so
// every leading dimension must be a multiple of 16 bytes: 8 fp16/bf16 elements, 4 TF32 (fp32)
// ones, 16 fp8 ones (cuBLAS library documentation, "Tensor Core Usage"; NVIDIA's Matrix
// Multiplication Background guide, "Tensor Core Requirements"). Otherwise it runs kernels with
// narrower accesses: before cuBLAS 11 the CUDA cores, since then tensor-core kernels that load
// 4 bytes per access where every leading dimension allows it, else one element. On an H200 with
// cuBLAS 13 (validation/measured/h200-alignment-2026-11-28.csv) GPT-2's LM-head GEMMs ran
// `..._align8` kernels at 613-803 TFLOP/s with vocabularies that are multiples of 8, `_align2`
// (4-byte accesses) at 237-279 with 30,522, 30,524, 50,258 or 50,260 tokens, and `_align1` at
// 94-149 with 50,257; in TF32, `_align1` (4-byte) at 116-130 against 204-363 aligned.
//
// Pricing, with no constant of its own: the library takes the faster of its two unaligned paths,
// the tensor-core kernel with its operand loads narrowed from 16-byte vectors to the access the
// leading dimensions allow (its rate x access bytes / 16: load-issue bound, the most the
// narrowing can cost; measured 1.3-1.6x less) and the CUDA cores at the precision's rate.
// Stacks that pad their dimensions (FrameworkSpec::gemm_dims_padded_to) pay nothing.
#pragma once

#include "models/graph.hpp"

namespace xpusim::analytical {

// The widest operand access, in bytes, that every leading dimension of the GEMM `a` allows --
// A [m, k] (or [k, m] when trans_a), B [k, n] (or [n, k] when trans_b), C [m, n], row-major --
// after the stack pads each up to a multiple of `padded_to` elements (0 = unpadded): 16 (the
// aligned kernels), else 4 where every leading dimension is a multiple of 4 bytes and an
// element is narrower, else the element itself.
double gemm_access_bytes(const OpAttrs& a, double element_bytes, int padded_to);

// The aligned kernels' access: a 16-byte vector.
constexpr double kAlignedAccessBytes = 16;

}  // namespace xpusim::analytical
