// simd/threads.hpp — when the kernels start an OpenMP team.
//
// OpenMP is optional (meson -Dopenmp=disabled, or a compiler without it): then every `#pragma omp`
// is ignored, the loops run on the calling thread, and the results are the same bits (simd.hpp).
// <omp.h> itself is included only by simd/build_info.cpp, behind a guard.
#pragma once

#include <algorithm>
#include <cstdint>

#include "simd/simd.hpp"

namespace attn::simd {

// Work below which a team is not started: 4 MFLOP, a small fraction of a millisecond on one core.
// Starting and joining a team costs a few microseconds on an idle machine, but when the other core
// is busy a spinning partner can hold a tiny job far longer than the job itself. With the threshold
// set to 0, BM_core_small (parallel against simd, d = 64, n = 16 … 512) shows where two threads
// stop losing: around 4 MFLOP (n ≈ 128).
inline constexpr double min_parallel_flops = 4.0e6;

// Start a team only when asked to, when there is enough work, and when it splits into ≥ 2 pieces.
inline bool use_team(Threads threads, double flops, std::uint64_t pieces) {
    return threads == Threads::all && flops >= min_parallel_flops && pieces >= 2;
}

// Called by every thread of a team a kernel starts: its size becomes last_team_size() (simd/team.cpp).
void record_team_size();

// The fused backward's team (simd/fused_backward.cpp): one thread per lane of dQ at most, one in all
// when the work is too small.
inline std::size_t fused_backward_team(std::size_t n, std::size_t m, std::size_t d_k) {
    if (!use_team(Threads::all, 10.0 * double(n) * double(m) * double(d_k), dq_lanes)) return 1;
    return std::min<std::size_t>(std::size_t(std::max(max_threads(), 1)), dq_lanes);
}

// The decode kernel's units, (group, block of keys), and its team: one thread per unit at most, one
// in all when the work is too small (simd/decode.cpp).
inline std::size_t decode_units(std::size_t groups, std::size_t keys, std::size_t block) {
    return groups * ((keys + block - 1) / block);
}
inline std::size_t decode_team(std::size_t units, std::size_t groups, std::size_t rows, std::size_t keys,
                               std::size_t d_k, std::size_t d_v) {
    if (!use_team(Threads::all, 2.0 * double(groups) * double(rows) * double(keys) * double(d_k + d_v), units))
        return 1;
    return std::min<std::size_t>(std::size_t(std::max(max_threads(), 1)), units);
}

}  // namespace attn::simd
