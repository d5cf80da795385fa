// GEMM operand alignment on the tensor cores (every analytical GPU: kernel model and roofline).
//
// cuBLAS's fast tensor-core kernels move their operands in 16-byte vectors (cp.async / TMA), so
// every leading dimension must be a multiple of 16 bytes: 8 fp16/bf16 elements, 4 TF32 (fp32)
// ones, 16 fp8 ones (cuBLAS library documentation, "Tensor Core Usage"; NVIDIA's Matrix
// Multiplication Background guide, "Tensor Core Requirements"). A GEMM with an odd leading
// dimension -- a language model's LM head over GPT-2's 50,257 tokens -- runs unaligned kernels:
// before cuBLAS 11 on the CUDA cores, since then tensor-core kernels that load one element per
// access instead of one 16-byte vector (on an H200 with cuBLAS 13 the three LM-head GEMMs of
// GPT-2 at 16 x 1,024 tokens ran `cutlass_75_tensorop_bf16_s1688gemm_*_align1` at 94-148
// TFLOP/s against 613-803 with the vocabulary padded to a multiple of 8;
// validation/measured/h200-alignment-2026-11-28.csv).
//
// Pricing, with no constant of its own: the library takes the faster of its two unaligned paths,
// the tensor-core kernel with its operand loads narrowed from one 16-byte vector to one element
// (its rate divided by the elements a vector holds: load-issue bound) and the CUDA cores at
// the precision's rate. Stacks that pad their dimensions (FrameworkSpec::gemm_dims_padded_to)
// pay nothing.
#pragma once

#include "models/graph.hpp"

namespace xpusim::analytical {

// Elements of `element_bytes` in one 16-byte vector access (at least 1).
double elements_per_vector(double element_bytes);

// Whether every leading dimension of the GEMM `a` describes -- A [m, k] (or [k, m] when
// trans_a), B [k, n] (or [n, k] when trans_b), C [m, n], row-major -- is a multiple of the
// elements a 16-byte vector holds, after the stack pads each up to a multiple of
// `padded_to` elements (0 = unpadded).
bool gemm_leading_dims_aligned(const OpAttrs& a, double element_bytes, int padded_to);


}  // namespace xpusim::analytical
