// Hand-written reorders for the conv weight copies every training step makes: from the fp32
// master in ABcd16b16a (the layout oneDNN's AVX-512 backward-weights primitive writes, in
// which the executor keeps conv weights, see Runner::weight_layout) to the layouts the
// forward and backward-data primitives read. oneDNN 2.6 runs these through its generic
// "jit:uni" reorder at well under 1 GB/s (ResNet-50 b16 on 2 Zen 5 cores: ~8% of a bf16 step,
// ~5% of an fp32 one); here each 16 x 16 block is transposed and/or converted in registers.
// Values are identical to oneDNN's (fp32 copies are exact; bf16 rounds to nearest even).
#pragma once
#include <dnnl.hpp>

#include <functional>

namespace xpusim::cpu {

// A function doing the reorder from `from` to `to` (data pointers), or an empty function
// when the pair is not one of: fp32 ABcd16b16a -> fp32 ABcd16a16b / BAcd16a16b, or bf16
// ABcd8b16a2b / ABcd8a16b2a / BAcd8a16b2a (bf16 needs avx512_bf16), without padding (O and I
// multiples of 16).
std::function<void(const void*, void*)> fast_weight_reorder(const dnnl::memory::desc& from,
                                                            const dnnl::memory::desc& to);

}  // namespace xpusim::cpu
