// bench/common.hpp — shared helpers of the benchmark program's files.
#pragma once

#include <benchmark/benchmark.h>

#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <chrono>
#include <fstream>
#include <random>
#include <string>

#include "attention/attention.hpp"
#include "matrix/random.hpp"
#include "simd/simd.hpp"

namespace bench {

// Uniform on [−1, 1), one seed per matrix so that each benchmark's inputs are fixed.
inline attn::Matrix random_matrix(std::size_t rows, std::size_t cols, unsigned seed) {
    std::mt19937 rng(seed);
    return attn::random_matrix(rows, cols, rng);
}

// GFLOPs: flops per second ÷ 1e9; bytes_per_second: distinct bytes read or written per second.
inline void set_counters(benchmark::State& st, double flops, double bytes) {
    if (flops > 0)
        st.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    st.SetBytesProcessed(static_cast<int64_t>(bytes) * st.iterations());
}

// 4·n²·d: two products of 2·n·n·d flops each (Q·Kᵀ and α·V); the softmax's O(n²) is not counted.
inline double core_flops(std::size_t n, std::size_t d) { return 4.0 * double(n) * double(n) * double(d); }
inline double core_bytes(std::size_t n, std::size_t d) {
    return (4.0 * double(n) * double(d) + double(n) * double(n)) * 4;
}

// Peak resident memory of this process (VmHWM), reset by writing 5 to /proc/self/clear_refs (Linux),
// so each benchmark reports its own peak. -1 where /proc does not offer it. Before the reset, glibc
// hands back to the system the heap pages earlier benchmarks freed (malloc_trim): after a free of
// the 1 GiB S, glibc serves buffers up to 32 MiB from its heap and keeps them resident when freed,
// and a later benchmark's peak would count them.
inline void reset_peak_rss() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    std::ofstream("/proc/self/clear_refs") << "5";
}

inline double peak_rss_mib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // the value is in kB
    return -1;
}

// CPU seconds of every thread of this process (user + system), for cpu ÷ wall: "threads_busy".
inline double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// How many threads were busy on average over the timed loop: CPU time of the whole process ÷ wall
// time. 2.0 on two threads means neither ever waited. OpenMP threads that wait spin before they
// sleep, and spinning counts as busy: run with OMP_WAIT_POLICY=passive to see the waiting.
class BusyThreads {
public:
    BusyThreads() : cpu_(process_cpu_seconds()), start_(std::chrono::steady_clock::now()) {}
    double operator()() const {
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        return wall > 0 ? (process_cpu_seconds() - cpu_) / wall : 0.0;
    }

private:
    double cpu_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace bench
