// simd/threads.hpp — when the kernels start an OpenMP team.
//
// OpenMP is optional (meson -Dopenmp=disabled, or a compiler without it): then every `#pragma omp`
// is ignored, the loops run on the calling thread, and the results are the same bits (simd.hpp).
// <omp.h> itself is included only by simd/build_info.cpp, behind a guard.
#pragma once

#include <cstdint>

#include "simd/simd.hpp"

namespace attn::simd {

// Work below which a team is not started: about 100 µs of arithmetic on one core. Starting and
// joining a team costs a few µs on an idle machine, but when the other core is busy a spinning
// partner can hold a tiny job much longer (a 1×2.6M input took 8–15 s against 19 ms on one thread).
// Measured with the threshold set to 0 (BM_core_small, d = 64, medians of 5; Intel Xeon family 6
// model 207, AVX-512, 2 vCPUs, L1d 48 KiB, L2 2 MiB per core): parallel/simd time was 1.04–1.16 at
// n = 16–32, 0.91–1.16 at n = 64–96, 0.98 at n = 128 (4.2 MFLOP), 0.82 at n = 192 (9.4 MFLOP) and
// 0.75 at n = 512. Two threads stop losing around 4 MFLOP and start winning by 9.
inline constexpr double min_parallel_flops = 4.0e6;

// Start a team only when asked to, when there is enough work, and when it splits into ≥ 2 pieces.
inline bool use_team(Threads threads, double flops, std::uint64_t pieces) {
    return threads == Threads::all && flops >= min_parallel_flops && pieces >= 2;
}

}  // namespace attn::simd
