// Training-mode batch normalisation on bf16 tensors stored channel-blocked by 16 (aBcd16b),
// the storage of the native bf16 path: the same maths and thread layout as bn_kernel.hpp
// (fp32 statistics and arithmetic, every thread owns whole channel blocks, no spinning
// barrier), with bf16 loads and round-to-nearest-even bf16 stores. It replaces oneDNN's
// bf16 batch norm for the reason bn_kernel.hpp gives, and it takes the same fusions (residual
// add and ReLU forward, ReLU mask backward), which oneDNN's batch norm cannot. 16 channels
// of one pixel are one AVX-512 register, so the kernel is written with AVX-512 intrinsics;
// it needs avx512_bf16 (VCVTNEPS2BF16), which every CPU on the native path has.
#pragma once
#include <cstdint>

#include "devices/cpu/bn_kernel.hpp"

namespace xpusim::cpu {

// Whether this CPU can run the kernels below (AVX-512 F/BW/VL and BF16).
bool bn_bf16_kernel_available();

// bf16 values are the upper 16 bits of fp32 (uint16_t here). sh.block must be 16 and
// sh.c a multiple of 16. mean and var (fp32) receive the batch mean and biased variance;
// residual may be null. Outputs never alias inputs.
void bn_forward_bf16(const BnShape& sh, float eps, const uint16_t* x, const float* gamma, const float* beta,
                     const uint16_t* residual, bool relu, uint16_t* y, float* mean, float* var);

// dy: gradient of the output; relu_y: the fused ReLU's output or null. dgamma, dbeta fp32.
void bn_backward_bf16(const BnShape& sh, float eps, const uint16_t* dy, const uint16_t* relu_y, const uint16_t* x,
                      const float* gamma, const float* mean, const float* var, uint16_t* dx, float* dgamma,
                      float* dbeta);

}  // namespace xpusim::cpu
