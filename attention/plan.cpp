// attention/plan.cpp — every buffer of a call, by name: what it converts (attention/inputs.cpp), its
// results' stacks (here), and each stage's scratch (attention/backends.cpp, beside the kernels that
// allocate it), times the heads running at once (attention/threads.cpp's schedule). Each step states
// what it needs by shape; the bytes are counted, checked, and the names written here, once (priced).
#include "attention/plan.hpp"

#include "attention/backends.hpp"
#include "attention/inputs.hpp"
#include "attention/threads.hpp"
#include "simd/simd.hpp"

namespace attn {

namespace {

bool materialised(Backend backend) { return backend != Backend::fused; }

// Each of `needs`, `copies` times (charged as one, its name saying how many).
void add(std::vector<Need>& plan, std::vector<Need> needs, std::size_t copies = 1) {
    for (Need& need : needs) {
        need.copies = copies;
        plan.push_back(std::move(need));
    }
}

// The scratch of one unit (a head, or a key/value head), listed with the thread count each unit sees.
template <class List>
std::vector<Need> scratch_per_unit(const Schedule& schedule, List&& list) {
    const ScopedThreads one(schedule.units_at_once ? 1 : 0, "plan");
    return list();
}

// The forward's results, O and α (materialised) or L (fused, kept for a backward), each a stack of
// every head named by its shape in the rank its operand has ("O (2×8×16×64)"), and its scratch.
void forward_buffers(const Call& c, const Shapes& s, bool decodes, std::vector<Need>& plan) {
    const AttentionOptions& o = c.options;
    plan.push_back({"O", s.of(s.heads, s.L, s.E_v), " of step 6"});
    if (materialised(o.backend))
        plan.push_back({"S/α", s.of(s.heads, s.L, s.S),
                        " of steps 3–5 on the " + to_string(o.backend) + " backend; --backend fused never stores S"});
    else if (o.keep_for_backward || c.task == Task::forward_backward)
        plan.push_back({"the log-sum-exp L", s.of(s.heads, s.L, simd::log_sum_exp_floats), " kept for the backward"});
    if (decodes)
        return add(plan, backends::decode_scratch_buffers(s.kv_count(), s.group * s.L, s.S, s.E, s.E_v, s.cache));
    const Schedule schedule = schedule_of(s.count(), o.backend);
    add(plan,
        scratch_per_unit(schedule,
                         [&] { return backends::attention_scratch_buffers(s.L, s.S, s.E, s.E_v, o.backend, o.dtype); }),
        schedule.workers);
}

// The backward's gradients, dQ, dK and dV, and its scratch for one key/value head at a time: one
// head's, and with G > 1 the dK and dV of the query heads after the first, before they are added.
void backward_buffers(const Call& c, const Shapes& s, std::vector<Need>& plan) {
    const Backend backend = c.options.backend;
    plan.push_back({"dQ", s.of(s.heads, s.L, s.E), " of grad 3"});
    plan.push_back({"dK", s.of(s.kv_heads, s.S, s.E), " of grad 3"});
    plan.push_back({"dV", s.of(s.kv_heads, s.S, s.E_v), " of grad 6"});
    const Schedule schedule = schedule_of(s.kv_count(), backend);
    std::vector<Need> scratch = scratch_per_unit(
        schedule, [&] { return backends::attention_gradient_scratch_buffers(s.L, s.S, s.E, s.E_v, backend); });
    if (s.group > 1) {
        scratch.push_back({"one query head's dK", {s.S, s.E}, ", added to its key/value head's"});
        scratch.push_back({"one query head's dV", {s.S, s.E_v}, ", added to its key/value head's"});
    }
    add(plan, std::move(scratch), schedule.workers);
}

// Grads 2–1, and the weights' gradients turned back to PyTorch's layout when the weights came so.
void layer_gradient_buffers(const Call& c, const Shapes& s, std::vector<Need>& plan) {
    add(plan, backends::projection_gradient_buffers(s.L, s.d_model, s.E, s.E_v, c.options.backend));
    if (!c.torch_weights) return;
    for (const auto& [name, d] : {std::pair{"dW_Q", s.E}, {"dW_K", s.E}, {"dW_V", s.E_v}})
        plan.push_back({name, {d, s.d_model}, " in PyTorch's layout"});
}

// Each need in bytes, checked (std::length_error naming it when even its size cannot be counted),
// named by what it holds, its shape and how many, and charged to the budget when there is one.
std::vector<Buffer> priced(const std::vector<Need>& needs, MemoryBudget* budget) {
    std::vector<Buffer> buffers;
    for (const Need& need : needs) {
        std::string name = (need.copies == 1 ? "" : std::to_string(need.copies) + " × ") + need.what +
                           (need.shape.empty() ? "" : " (" + shape_string(need.shape) + ")") + need.note;
        std::uint64_t count = 1;
        for (const std::size_t d : need.shape) count = checked_product(count, d, name);
        const std::uint64_t bytes = checked_product(
            checked_product(checked_product(count, need.each, name), need.times, name), need.copies, name);
        if (budget) budget->charge(bytes, name);
        buffers.push_back({std::move(name), bytes});
    }
    return buffers;
}

}  // namespace

bool forward_decodes(const Call& c, const Shapes& s) {
    const bool forward = c.task == Task::forward || c.task == Task::forward_backward;
    const bool output = s.count() > 0 && s.L > 0 && s.E_v > 0;
    return forward && output && backends::decodes(c.options.backend, c.options.dtype, s.L, s.cache);
}

std::vector<Buffer> buffers_of(const Call& c, const Shapes& s, bool decodes, MemoryBudget* budget) {
    std::vector<Need> plan = conversion_buffers(c, s, decodes);
    if (s.layer && c.task != Task::backward)
        add(plan, backends::projection_buffers(s.L, s.d_model, s.E, s.E_v, c.options.backend));
    if (c.task == Task::forward || c.task == Task::forward_backward) forward_buffers(c, s, decodes, plan);
    if (c.task == Task::forward_backward || c.task == Task::backward) backward_buffers(c, s, plan);
    if (s.layer && (c.task == Task::forward_backward || c.task == Task::backward)) layer_gradient_buffers(c, s, plan);
    return priced(plan, budget);
}

}  // namespace attn
