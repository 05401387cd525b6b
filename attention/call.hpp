// attention/call.hpp — one call of the library, described once: its operands as views of any rank,
// stride and element type, what it computes, and its options. Every entry point (attention.hpp,
// heads.hpp, `attn run`, the Python module) builds one; attention/run.hpp runs it, the one path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attention/options.hpp"

namespace attn {

// The type of an array's elements, as its owner holds them.
enum class Element { f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, boolean };
std::string to_string(Element element);  // "float32", "float64", "float16", "bfloat16", "int8", …, "bool"

// An array someone else owns, read where it lies: any rank (its shape, outermost first), strides in
// elements (none given: C order), any element type, either byte order. One the kernels can read as
// it is (float32, or a cache's own 16-bit type, in this machine's byte order and C order) is read in
// place; any other is converted first, into a buffer the call's plan names and charges.
struct View {
    const void* data = nullptr;
    std::span<const std::size_t> shape = {};
    std::span<const std::ptrdiff_t> strides = {};
    Element element = Element::f32;
    bool swapped = false;  // its bytes are in the other order than this machine's (a '>f2' array here)
};

// Whether a call reads the view where it lies: float32, or a 16-bit cache of its own type (a key or
// value), in this machine's byte order and C order (attention/inputs.cpp).
bool read_in_place(const View& view);
// The view's values as a float32 matrix of (its elements ÷ its last dimension) rows, in C order:
// converted as a call converts it (for a caller that keeps a copy, such as a layer's weights).
Matrix to_matrix(const View& view);

// What a call computes.
enum class Task {
    forward,           // O, and α on the materialised backends (L too with keep_for_backward on fused)
    forward_backward,  // the forward, then the gradients for dO = ∂L/∂O
    backward,          // the gradients for dO of a forward already computed, whose results are given
    project,           // the layer's steps 1–2 alone: Q, K, V
};
inline constexpr Task all_tasks[] = {Task::forward, Task::forward_backward, Task::backward, Task::project};
std::string to_string(Task task);  // "forward", "forward_backward", "backward", "project"
Task task_from_string(const std::string& name, const std::string& option = "task");

struct Call {
    Task task = Task::forward;
    // Attention: Q (N..., H, L, E), K (N..., H_kv, S, E), V (N..., H_kv, S, E_v), any number of leading
    // dimensions N..., the same for all three (read as one batch B); 2-D arrays are one head. H is a
    // multiple of H_kv: query head h reads key/value head h / (H / H_kv). For the layer, the
    // projections, given only to its backward.
    std::optional<View> Q = {}, K = {}, V = {};
    // The layer: X (n×d_model) and its weights W_Q, W_K (d_model×d_k) and W_V (d_model×d_v), all 2-D;
    // steps 1–2 compute Q, K and V. torch_weights: given as nn.Linear holds them, (d × d_model); their
    // gradients then come back so too.
    std::optional<View> X = {}, W_Q = {}, W_K = {}, W_V = {};
    bool torch_weights = false;
    // A mask over the scores, broadcast to (N..., H, L, S) as NumPy broadcasts: boolean (true: the
    // query may attend to the key) or floating point (added after the scale; −∞ allowed).
    std::optional<View> mask = {};
    // The type the keys and values are read in: none given, their own (a float16 or bfloat16 array is
    // a cache of that type, read in place; any other is read as float32); given, they are rounded into it.
    std::optional<KvDtype> kv_dtype = {};
    // dO = ∂L/∂O (the output's shape), for forward_backward and backward; and for backward the
    // forward's results: O, with α (materialised backends) or the log-sum-exp L and its remainder (fused, N..., H, L, 2).
    std::optional<View> dO = {}, O = {}, weights = {}, log_sum_exp = {};
    // Everything else: causal, scale, threads, backend, dtype, budget, the operands' names. Its mask
    // is not read (the view above is), and keep_for_backward is the forward task's alone.
    AttentionOptions options = {};
};

// A result of a call: float32 values in C order, and the shape they are read in, of the rank of the
// operand it belongs to (O and α have the queries' rank; dK and dV the keys').
struct Result {
    Matrix values;
    std::vector<std::size_t> shape;
};

struct Results {
    Result Q, K, V;                       // project; and the layer's forward_backward
    Result output, weights, log_sum_exp;  // the forward
    Result dQ, dK, dV;                    // the backward
    Result dX, dW_Q, dW_K, dW_V;          // the layer's backward
    // Grads 6–4's n×m buffer of one head on the materialised backends (dα, then dS), kept so that a
    // caller that runs the backward again with the same Results allocates it once.
    Matrix dS;
};

// A buffer a call allocates, named for a refusal ("S/α (300×280) of steps 3–5 on the simd backend").
struct Buffer {
    std::string name;
    std::uint64_t bytes;
};

// A buffer as the step that allocates it states it, before it is counted: what it holds and its
// shape, in elements of `each` bytes, which its name shows ("O (2×8×16×64) of step 6"); with no
// shape, `each` is the bytes a kernel counts for itself. `times` of it for a team of threads that
// `what` names; `copies` for the units that run at once, which its name counts ("2 × …"). The plan
// (attention/plan.cpp) does the arithmetic, checked, and names it, in one place.
struct Need {
    std::string what;
    std::vector<std::size_t> shape = {};
    std::string note = {};
    std::uint64_t each = sizeof(float);
    std::uint64_t times = 1, copies = 1;
};

}  // namespace attn
