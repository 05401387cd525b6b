// attention/plan.cpp — every buffer of a call, by name: what it converts (attention/inputs.cpp), its
// results' stacks (here), and each stage's scratch (attention/backends.cpp, beside the kernels that
// allocate it), times the heads running at once (attention/threads.cpp's schedule).
#include "attention/plan.hpp"

#include "attention/backends.hpp"
#include "attention/inputs.hpp"
#include "attention/threads.hpp"
#include "simd/simd.hpp"

namespace attn {

namespace {

bool materialised(Backend backend) { return backend != Backend::fused; }

// A stack of results of every head, named by its shape in the rank its operand has: "O (2×8×16×64)".
Buffer stack(const std::string& name, const std::vector<std::size_t>& shape, const std::string& of) {
    std::uint64_t count = 1;
    for (const std::size_t d : shape) count = checked_product(count, d, name);
    return {name + " (" + shape_string(shape) + ")" + of, checked_product(count, sizeof(float), name)};
}

// Each of `buffers`, `copies` times (charged as one, its name saying how many).
void add(std::vector<Buffer>& plan, const std::vector<Buffer>& buffers, std::size_t copies = 1) {
    for (const Buffer& buffer : buffers)
        plan.push_back(copies == 1 ? buffer
                                   : Buffer{std::to_string(copies) + " × " + buffer.name,
                                            checked_product(buffer.bytes, copies, buffer.name)});
}

// The scratch of one unit (a head, or a key/value head), listed with the thread count each unit sees.
template <class List>
std::vector<Buffer> scratch_per_unit(const Schedule& schedule, List&& list) {
    const ScopedThreads one(schedule.units_at_once ? 1 : 0, "plan");
    return list();
}

// The forward's results, O and α (materialised) or L (fused, kept for a backward), and its scratch.
void forward_buffers(const Call& c, const Shapes& s, bool decodes, std::vector<Buffer>& plan) {
    const AttentionOptions& o = c.options;
    plan.push_back(stack("O", s.of(s.heads, s.L, s.E_v), " of step 6"));
    if (materialised(o.backend))
        plan.push_back(
            stack("S/α", s.of(s.heads, s.L, s.S),
                  " of steps 3–5 on the " + to_string(o.backend) + " backend; --backend fused never stores S"));
    else if (o.keep_for_backward || c.task == Task::forward_backward)
        plan.push_back(
            stack("the log-sum-exp L", s.of(s.heads, s.L, simd::log_sum_exp_floats), " kept for the backward"));
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
void backward_buffers(const Call& c, const Shapes& s, std::vector<Buffer>& plan) {
    const Backend backend = c.options.backend;
    plan.push_back(stack("dQ", s.of(s.heads, s.L, s.E), " of grad 3"));
    plan.push_back(stack("dK", s.of(s.kv_heads, s.S, s.E), " of grad 3"));
    plan.push_back(stack("dV", s.of(s.kv_heads, s.S, s.E_v), " of grad 6"));
    const Schedule schedule = schedule_of(s.kv_count(), backend);
    std::vector<Buffer> scratch = scratch_per_unit(
        schedule, [&] { return backends::attention_gradient_scratch_buffers(s.L, s.S, s.E, s.E_v, backend); });
    if (s.group > 1)
        scratch.push_back({"one query head's dK (" + shape_string(s.S, s.E) + ") and dV (" + shape_string(s.S, s.E_v) +
                               "), added to their key/value head's",
                           checked_sum(matrix_bytes(s.S, s.E), matrix_bytes(s.S, s.E_v), "dK and dV")});
    add(plan, scratch, schedule.workers);
}

// Grads 2–1, and the weights' gradients turned back to PyTorch's layout when the weights came so.
void layer_gradient_buffers(const Call& c, const Shapes& s, std::vector<Buffer>& plan) {
    add(plan, backends::projection_gradient_buffers(s.L, s.d_model, s.E, s.E_v, c.options.backend));
    if (!c.torch_weights) return;
    for (const auto& [name, d] : {std::pair{"dW_Q", s.E}, {"dW_K", s.E}, {"dW_V", s.E_v}})
        plan.push_back({std::string(name) + " (" + shape_string(d, s.d_model) + ") in PyTorch's layout",
                        matrix_bytes(d, s.d_model)});
}

}  // namespace

bool forward_decodes(const Call& c, const Shapes& s) {
    const bool forward = c.task == Task::forward || c.task == Task::forward_backward;
    const bool output = s.count() > 0 && s.L > 0 && s.E_v > 0;
    return forward && output && backends::decodes(c.options.backend, c.options.dtype, s.L, s.cache);
}

std::vector<Buffer> buffers_of(const Call& c, const Shapes& s, bool decodes) {
    std::vector<Buffer> plan = conversion_buffers(c, s, decodes);
    if (s.layer && c.task != Task::backward)
        add(plan, backends::projection_buffers(s.L, s.d_model, s.E, s.E_v, c.options.backend));
    if (c.task == Task::forward || c.task == Task::forward_backward) forward_buffers(c, s, decodes, plan);
    if (c.task == Task::forward_backward || c.task == Task::backward) backward_buffers(c, s, plan);
    if (s.layer && (c.task == Task::forward_backward || c.task == Task::backward)) layer_gradient_buffers(c, s, plan);
    return plan;
}

void charge(MemoryBudget& budget, const std::vector<Buffer>& buffers) {
    for (const Buffer& buffer : buffers) budget.charge(buffer.bytes, buffer.name);
}

}  // namespace attn
