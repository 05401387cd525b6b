// attention/plan.cpp — gathering a call's buffers, charging them once, and the thread count of a call.
#include "attention/plan.hpp"

#include <stdexcept>

#include "simd/simd.hpp"

namespace attn {

Plan& Plan::keeping_for_backward() {
    options_.keep_for_backward = true;
    return *this;
}

Plan& Plan::projection(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v) {
    if (!options_.budget) return *this;  // nothing to charge
    return add(backends::projection_buffers(n, d_model, d_k, d_v, options_.backend));
}

Plan& Plan::attention(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v) {
    if (!options_.budget) return *this;  // nothing to charge
    return add(
        backends::attention_buffers(n, m, d_k, d_v, options_.backend, options_.keep_for_backward, options_.dtype));
}

Plan& Plan::attention_gradients(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v) {
    if (!options_.budget) return *this;  // nothing to charge
    return add(backends::attention_gradient_buffers(n, m, d_k, d_v, options_.backend));
}

Plan& Plan::projection_gradients(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v) {
    if (!options_.budget) return *this;  // nothing to charge
    return add(backends::projection_gradient_buffers(n, d_model, d_k, d_v, options_.backend));
}

Plan& Plan::add(const std::vector<backends::Buffer>& buffers, std::size_t copies) {
    for (const backends::Buffer& buffer : buffers)
        buffers_.push_back(copies == 1 ? buffer
                                       : backends::Buffer{std::to_string(copies) + " × " + buffer.name,
                                                          checked_product(buffer.bytes, copies, buffer.name)});
    return *this;
}

AttentionOptions Plan::charge() const {
    if (options_.budget)
        for (const backends::Buffer& buffer : buffers_) options_.budget->charge(buffer.bytes, buffer.name);
    AttentionOptions run = options_;
    run.budget = nullptr;  // charged: the stages allocate nothing else
    return run;
}

ScopedThreads::ScopedThreads(int threads) {
    if (threads < 0)
        throw std::invalid_argument("scaled_dot_product_attention: threads = " + std::to_string(threads) +
                                    " (0 for OpenMP's default, or a positive count)");
    if (threads == 0) return;
    saved_ = simd::max_threads();
    simd::set_max_threads(threads);
}

ScopedThreads::~ScopedThreads() {
    if (saved_ > 0) simd::set_max_threads(saved_);
}

}  // namespace attn
