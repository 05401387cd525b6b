// simd/build_info.cpp — what this build runs on: instruction set, batch width, OpenMP threads.
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "simd/batch.hpp"
#include "simd/simd.hpp"

namespace attn::simd {

std::string instruction_set() { return xsimd::default_arch::name(); }
std::size_t batch_width() { return W; }

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
