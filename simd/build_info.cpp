// simd/build_info.cpp — what this build runs on: the CPU's model name, and OpenMP (whether this
// build has it, and how many threads a team gets).
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "simd/simd.hpp"

namespace attn::simd {

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        for (const char* key : {"model name", "Hardware", "Model"}) {
            if (line.rfind(key, 0) == 0 && line.find(':') != std::string::npos) {
                std::string value = line.substr(line.find(':') + 1);
                value.erase(0, value.find_first_not_of(" \t"));
                if (!value.empty()) return value;
            }
        }
    }
    return "unknown";
}

#if defined(_OPENMP)
bool openmp_built() { return true; }
// What a parallel region started now gets: OMP_NUM_THREADS (or every core), capped by
// OMP_THREAD_LIMIT, which libgomp applies to the team but not to omp_get_max_threads().
int max_threads() { return std::max(1, std::min(omp_get_max_threads(), omp_get_thread_limit())); }
void set_max_threads(int threads) { omp_set_num_threads(threads); }
int cores() { return std::max(1, omp_get_num_procs()); }
int default_team() {
    const char* asked = std::getenv("OMP_NUM_THREADS");
    const int threads = asked && std::atoi(asked) > 0 ? std::atoi(asked) : cores();
    return std::min(threads, omp_get_thread_limit());
}
#else
bool openmp_built() { return false; }
int max_threads() { return 1; }
void set_max_threads(int) {}
int cores() { return 1; }
int default_team() { return 1; }
#endif

}  // namespace attn::simd
