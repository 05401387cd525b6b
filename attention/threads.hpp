// attention/threads.hpp — how many threads a call runs on, and how its heads share them: the rule,
// in one place (attention/threads.cpp). Internal to attention/; options.hpp says what a caller asks.
#pragma once

#include <cstddef>

#include "attention/options.hpp"

namespace attn {

// options.threads for as long as it lives: 0 leaves OpenMP's count as it stands; a positive count is
// the thread count of every team the kernels start (whatever another library in the process set),
// at most simd::cores(): more threads than the CPUs the process may run on would only take turns,
// and an absurd count would fail to start. Restored when the call returns or throws. A negative count
// is refused (std::invalid_argument naming `who`). Made before the plan, which counts the threads
// of the kernels' teams.
class ScopedThreads {
public:
    ScopedThreads(int threads, const std::string& who);
    ~ScopedThreads();
    ScopedThreads(const ScopedThreads&) = delete;
    ScopedThreads& operator=(const ScopedThreads&) = delete;

private:
    int saved_ = 0;  // the caller's count, 0 when nothing was changed
};

// Threads for the heads (or, decoding and in the backward, the key/value heads): with at least two
// units per thread, the units are shared out over a team, one unit on one thread (its kernels on that
// thread alone); otherwise they run one after another, each with the kernels' own team. The kernels
// give the same bits for any thread count, so both give the same results.
struct Schedule {
    bool units_at_once;
    std::size_t workers;  // units running at the same time
};
Schedule schedule_of(std::size_t units, Backend backend);

}  // namespace attn
