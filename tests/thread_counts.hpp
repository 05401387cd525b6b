// tests/thread_counts.hpp — for the cases that compare results across thread counts.
#pragma once

#include <catch2/catch.hpp>

#include "simd/simd.hpp"

// False, with a warning that says why the case is skipped, in a build without OpenMP: there is
// only one thread count then, so there is nothing to compare.
inline bool several_thread_counts() {
    if (attn::simd::openmp_built()) return true;
    WARN("skipped: built without OpenMP, so there is only one thread count to compare");
    return false;
}
