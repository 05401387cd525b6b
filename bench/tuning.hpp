// bench/tuning.hpp — the block-size sweep of bench/tuning.cpp.
#pragma once

namespace bench {

// Registers BM_tune_gemm/… and BM_tune_fused/… around the block sizes of simd::blocking().
void register_tuning();

}  // namespace bench
