// attention/run.cpp — the one path every call takes (attention/run.hpp), in its order:
//
//   shapes      every shape checked (attention/shapes.cpp)
//   threads     the call's thread count, set for as long as it runs (attention/threads.cpp)
//   the choice  which kernel the forward runs, decode or not, made once (attention/plan.cpp)
//   plan        every buffer the call will allocate, by name (attention/plan.cpp), …
//   charge      … charged to the budget at once: a call that does not fit is refused before any work
//   values      its inputs converted to what the kernels read (attention/inputs.cpp); then, head by
//               head, their values checked before that head's kernels (attention/guards.cpp)
//   run         the layer's steps 1–2, then the chain of every head (attention/every_head.cpp),
//               forward, then backward, then the layer's grads 2–1.
#include "attention/run.hpp"

#include <utility>

#include "attention/chain.hpp"
#include "attention/every_head.hpp"
#include "attention/guards.hpp"
#include "attention/inputs.hpp"
#include "attention/plan.hpp"
#include "attention/threads.hpp"
#include "matrix/ops.hpp"
#include "simd/simd.hpp"

namespace attn {

namespace {

// A matrix the library computed, as the one head of a stack of heads.
HeadsView as_head(const Matrix& M) { return {M.data(), {1, 1, M.rows(), M.cols()}}; }

HeadsView floats_of(const CacheView& cache) { return {static_cast<const float*>(cache.data), cache.shape}; }

// The layer's steps 1–2 (after their values), its projections kept as results of the call.
void project(const Inputs& in, const Shapes& s, const AttentionOptions& run, Results& r) {
    guards::check_weight_values(in.W_Q, in.W_K, in.W_V, run.names);
    guards::check_projection_values(in.X, in.W_Q, in.W_K, in.W_V, run.names);  // float range, before any work
    SingleHeadAttention::Projections p{std::move(r.Q.values), std::move(r.K.values), std::move(r.V.values)};
    chain::project(in.X, in.W_Q, in.W_K, in.W_V, run.backend, p);
    r.Q = {std::move(p.Q), {s.L, s.E}};
    r.K = {std::move(p.K), {s.L, s.E}};
    r.V = {std::move(p.V), {s.L, s.E_v}};
}

// The forward's results the backward reads: given to a backward call, else just computed.
struct Forward {
    HeadsView O, weights, log_sum_exp;
};

Forward forward_of(const Call& call, const Inputs& in, const Shapes& s, const Results& r) {
    if (call.task == Task::backward) return {in.O, in.weights, in.log_sum_exp};
    const auto stack = [&](const Result& result, std::size_t cols) {
        return HeadsView{result.values.data(), {s.batch, s.heads, s.L, cols}};
    };
    return {stack(r.output, s.E_v), stack(r.weights, s.S), stack(r.log_sum_exp, simd::log_sum_exp_floats)};
}

// The layer's grads 2–1: their range, from the inputs alone, before any gradient is computed …
void check_layer_gradients(const Inputs& in, const HeadsView& Q, const CacheView& K, const CacheView& V,
                           const AttentionOptions& run) {
    const guards::GradientBounds bounds = guards::check_backward_values(Q.head(0, 0), floats_of(K).head(0, 0),
                                                                        floats_of(V).head(0, 0), in.dO.head(0, 0), run);
    guards::check_projection_gradient_values(in.X, in.W_Q, in.W_K, in.W_V, bounds, run.names);
}

// … and after the core's gradients, dX and the weights' gradients, in PyTorch's layout when the
// weights came so.
void project_backward(const Call& call, const Inputs& in, const Shapes& s, const AttentionOptions& run, Results& r) {
    const AttentionGradients qkv{Matrix::borrow(r.dQ.values.data(), s.L, s.E),
                                 Matrix::borrow(r.dK.values.data(), s.S, s.E),
                                 Matrix::borrow(r.dV.values.data(), s.S, s.E_v), Matrix()};
    SingleHeadAttention::Gradients g;
    chain::project_backward(in.X, in.W_Q, in.W_K, in.W_V, qkv, run.backend, g);
    r.dX = {std::move(g.dX), {s.L, s.d_model}};
    for (const auto& [result, dW] : {std::pair{&r.dW_Q, &g.dW_Q}, {&r.dW_K, &g.dW_K}, {&r.dW_V, &g.dW_V}}) {
        result->values = call.torch_weights ? transpose(*dW) : std::move(*dW);
        result->shape = {result->values.rows(), result->values.cols()};
    }
}

}  // namespace

void run(const Call& call, Results& r) {
    const Shapes s = shapes_of(call);
    const ScopedThreads threads(call.options.threads, s.who);
    const bool decodes = forward_decodes(call, s);
    if (call.options.budget) buffers_of(call, s, decodes, call.options.budget);  // charged, each buffer by name
    const Inputs in = inputs_of(call, s, decodes);
    AttentionOptions run = call.options;  // charged: the steps allocate nothing else
    run.budget = nullptr;
    run.mask = in.mask ? &*in.mask : nullptr;
    run.keep_for_backward = call.options.keep_for_backward || call.task == Task::forward_backward;
    const bool projects = s.layer && call.task != Task::backward;
    if (projects) project(in, s, run, r);
    if (call.task == Task::project) return;
    const HeadsView Q = projects ? as_head(r.Q.values) : in.Q;
    const CacheView K = projects ? as_head(r.K.values) : in.K, V = projects ? as_head(r.V.values) : in.V;
    if (s.count() == 0) check_unread_values(K, V, s, run);  // no query head reads them
    if (call.task != Task::backward) forward_every_head(Q, K, V, s, run, decodes, r);
    if (call.task == Task::forward) return;
    if (s.layer) check_layer_gradients(in, Q, K, V, run);
    const Forward forward = forward_of(call, in, s, r);
    backward_every_head(Q, floats_of(K), floats_of(V), forward.O, forward.weights, forward.log_sum_exp, in.dO, s, run,
                        r);
    if (s.layer) project_backward(call, in, s, run, r);
}

std::vector<Buffer> plan(const Call& call) {
    const Shapes shapes = shapes_of(call);
    const ScopedThreads threads(call.options.threads, shapes.who);
    return buffers_of(call, shapes, forward_decodes(call, shapes));
}

}  // namespace attn
