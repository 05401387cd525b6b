// simd/team.cpp — a loop shared out over an OpenMP team, and the size of the last team started.
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

#include "simd/simd.hpp"
#include "simd/threads.hpp"

namespace attn::simd {

namespace {

std::atomic<int> last_team{1};

}  // namespace

void record_team_size() {
#if defined(_OPENMP)
    if (omp_get_thread_num() == 0) last_team.store(omp_get_num_threads(), std::memory_order_relaxed);
#else
    last_team.store(1, std::memory_order_relaxed);
#endif
}

int last_team_size() { return last_team.load(std::memory_order_relaxed); }

void for_each_in_team(std::size_t count, Threads threads, const std::function<void(std::size_t)>& body) {
    if (threads != Threads::all || count < 2) {  // on the calling thread: a team of one
        last_team.store(1, std::memory_order_relaxed);
        for (std::size_t k = 0; k < count; ++k) body(k);
        return;
    }
    std::exception_ptr first_error;
    std::mutex error_mutex;
    std::atomic<bool> failed{false};
    [[maybe_unused]] const int team_size = static_cast<int>(std::min<std::size_t>(std::size_t(max_threads()), count));
#pragma omp parallel num_threads(team_size)
    {
        record_team_size();
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t k = 0; k < static_cast<std::ptrdiff_t>(count); ++k) {
            if (failed.load(std::memory_order_relaxed)) continue;  // after an error, the rest is skipped
            try {
                body(static_cast<std::size_t>(k));
            } catch (...) {
                const std::lock_guard lock(error_mutex);
                if (!first_error) first_error = std::current_exception();
                failed.store(true, std::memory_order_relaxed);
            }
        }
    }
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace attn::simd
