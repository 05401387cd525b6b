// attention/plan.hpp — a public call as a plan, then a run. Each entry point checks its shapes, lists
// the stages it will run with their sizes (the plan gathers the buffers each stage allocates, from
// attention/backends.hpp), charges them to options.budget once, and runs its stages with the options
// the plan hands back: the budget already spent, so no stage charges again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/backends.hpp"

namespace attn {

class Plan {
public:
    explicit Plan(const AttentionOptions& options) : options_(options) {}

    // The stages below list nothing without a budget: there is nothing to charge.
    // The forward keeps what the backward needs (for a call that runs both): listed and run so.
    Plan& keeping_for_backward();
    // Steps 1–2 for X (n×d_model).
    Plan& projection(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v);
    // Steps 3–6 for n queries and m keys, keeping for the backward when the options say so.
    Plan& attention(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v);
    // Grads 6–3 and grads 2–1.
    Plan& attention_gradients(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v);
    Plan& projection_gradients(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v);
    // Buffers listed by the caller (the many-heads entry points list whole stacks of heads), each
    // `copies` times (charged as one, its name saying how many).
    Plan& add(const std::vector<backends::Buffer>& buffers, std::size_t copies = 1);

    // Charges every buffer listed to options.budget, when there is one (std::length_error naming the
    // first that does not fit: nothing has run), and returns the options the stages run with.
    AttentionOptions charge() const;

private:
    AttentionOptions options_;
    std::vector<backends::Buffer> buffers_;
};

// options.threads for as long as it lives: a positive count is the thread count of every team the
// kernels start (whatever another library in the process set), restored when the call returns or
// throws; 0 leaves the caller's count. A negative count is refused (std::invalid_argument). Made
// before the plan, which counts the threads of the kernels' teams.
class ScopedThreads {
public:
    explicit ScopedThreads(int threads);
    ~ScopedThreads();
    ScopedThreads(const ScopedThreads&) = delete;
    ScopedThreads& operator=(const ScopedThreads&) = delete;

private:
    int saved_ = 0;  // the caller's count, 0 when nothing was changed
};

}  // namespace attn
