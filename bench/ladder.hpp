// bench/ladder.hpp — the SIMD ladder and the memory roofline of bench/ladder.cpp.
#pragma once

namespace bench {

// Registers BM_ladder/…, BM_ladder_peak/… (per instruction set this CPU runs) and BM_stream_triad/….
void register_ladder();

}  // namespace bench
