// attention/threads.cpp — the threads of a call: the count it asks for, capped, set and restored,
// and how its heads share them.
#include "attention/threads.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "simd/simd.hpp"

namespace attn {

ScopedThreads::ScopedThreads(int threads, const std::string& who) {
    if (threads < 0)
        throw std::invalid_argument(who + ": threads = " + std::to_string(threads) +
                                    " (0 for OpenMP's count, or a positive count)");
    if (threads == 0) return;
    saved_ = simd::max_threads();
    simd::set_max_threads(std::min(threads, simd::cores()));
}

ScopedThreads::~ScopedThreads() {
    if (saved_ > 0) simd::set_max_threads(saved_);
}

int every_core() { return std::min(simd::default_team(), simd::cores()); }

Schedule schedule_of(std::size_t units, Backend backend) {
    const std::size_t threads = std::size_t(simd::max_threads());
    const bool spread =
        (backend == Backend::parallel || backend == Backend::fused) && threads >= 2 && units >= 2 * threads;
    return {spread, spread ? threads : 1};
}

}  // namespace attn
