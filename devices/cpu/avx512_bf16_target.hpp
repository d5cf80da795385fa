// Compiling kernels for AVX-512 + BF16 inside a project that targets the x86-64 baseline:
// one function attribute, and the GCC 12 warning those intrinsics raise. Include only in a
// .cpp whose AVX-512 functions are called after bn_bf16_kernel_available() (run-time check).
#pragma once

// GCC 12 warns on its own _mm512_undefined_*() self-initialisation inside the intrinsics
// (GCC bug 105593, fixed in 13); nothing in the including file reads uninitialised data.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define XPUSIM_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
