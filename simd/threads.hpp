// simd/threads.hpp — when the kernels start an OpenMP team, and the one place that includes <omp.h>.
//
// OpenMP is optional (meson -Dopenmp=disabled, or a compiler without it): then every `#pragma omp`
// is ignored, the loops run on the calling thread, and the results are the same bits (simd.hpp).
#pragma once

#include <cstdint>

#include "simd/simd.hpp"

namespace attn::simd {

// Work below which a team is not started: about 80 µs of arithmetic on one core. Starting and
// joining a team costs ~2–5 µs on an idle machine, but when the other core is busy a spinning
// partner can hold a tiny job for milliseconds (a 1×2.6M input took 8–15 s against 19 ms on one
// thread). Measured crossover (BM_parallel_threshold, docs/performance.md): 2 threads start to win
// at the attention core for n = 64, d = 64 (2 MFLOP).
inline constexpr double min_parallel_flops = 4.0e6;

// Start a team only when asked to, when there is enough work, and when it splits into ≥ 2 pieces.
inline bool use_team(Threads threads, double flops, std::uint64_t pieces) {
    return threads == Threads::all && flops >= min_parallel_flops && pieces >= 2;
}

}  // namespace attn::simd
