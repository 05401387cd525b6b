// simd/build_info.cpp — OpenMP: whether this build has it, and how many threads a team gets.
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "simd/simd.hpp"

namespace attn::simd {

#if defined(_OPENMP)
bool openmp_built() { return true; }
int max_threads() { return omp_get_max_threads(); }
void set_max_threads(int threads) { omp_set_num_threads(threads); }
#else
bool openmp_built() { return false; }
int max_threads() { return 1; }
void set_max_threads(int) {}
#endif

}  // namespace attn::simd
