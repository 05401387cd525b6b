// The memory budget against what is really allocated: every buffer the library allocates during a
// call must have been charged, by name, before the call's first step, on every backend. This
// program counts every operator new (the aligned ones too) while a call runs, and matches each
// allocation of 4 KiB or more against the budget's recorded charges.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <random>
#include <sstream>
#include <vector>

#include "attention/attention.hpp"
#include "attention/heads.hpp"
#include "matrix/random.hpp"
#include "matrix/size.hpp"
#include "simd/simd.hpp"

namespace {

std::atomic<bool> counting{false};
std::mutex record_mutex;
std::vector<std::size_t>* recorded = nullptr;  // sizes of the counted allocations (allocated while not counting)

// The bytes of counted blocks alive now, and the most alive at once since counting began.
std::atomic<std::uint64_t> live{0}, peak{0};

// Whether a block is counted (4 KiB or more, allocated while counting), after recording its size.
[[maybe_unused]] bool record(std::size_t bytes) {
    if (!counting.load(std::memory_order_relaxed) || bytes < 4096) return false;
    const std::uint64_t now = live.fetch_add(bytes) + bytes;
    for (std::uint64_t top = peak.load(); now > top && !peak.compare_exchange_weak(top, now);) {}
    const std::lock_guard lock(record_mutex);
    if (recorded->size() < recorded->capacity()) recorded->push_back(bytes);  // never allocates while counting
    return true;
}

// Each block carries, just before what the caller gets, where it starts, its size and whether it
// was counted, so that a delete knows what it frees.
struct Header {
    void* start;
    std::size_t bytes;
    bool counted;
};
constexpr std::size_t front = 64;  // room for the header, and a multiple of every alignment asked here

[[maybe_unused]] void* allocate(std::size_t bytes, std::size_t alignment) {
    const std::size_t align = std::max(alignment, alignof(std::max_align_t)), room = std::max(front, align);
    void* start = std::aligned_alloc(align, (room + bytes + align - 1) / align * align);
    if (!start) throw std::bad_alloc();
    void* p = static_cast<char*>(start) + room;
    static_cast<Header*>(p)[-1] = {start, bytes, record(bytes)};
    return p;
}

[[maybe_unused]] void release(void* p) {
    if (!p) return;
    const Header h = static_cast<Header*>(p)[-1];
    if (h.counted) live.fetch_sub(h.bytes);
    std::free(h.start);
}

// Every allocation counted during `call`, largest first.
template <class Call>
std::vector<std::size_t> allocations_of(Call&& call) {
    std::vector<std::size_t> sizes;
    sizes.reserve(4096);
    recorded = &sizes;
    live = 0;
    peak = 0;
    counting = true;
    call();
    counting = false;
    std::sort(sizes.rbegin(), sizes.rend());
    return sizes;
}

// Each charge is room for what it names (the fused kernel's is every thread's scratch, several
// buffers); each allocation, largest first, goes into the charge with the least room left that
// still holds it. Returns the first allocation no charge has room for (0 when all fit).
std::size_t uncharged(const std::vector<std::size_t>& allocations, const attn::MemoryBudget& budget) {
    std::vector<std::uint64_t> room;
    for (const auto& c : budget.charges()) room.push_back(c.bytes);
    for (const std::size_t a : allocations) {
        std::uint64_t* best = nullptr;
        for (std::uint64_t& r : room)
            if (r >= a && (!best || r < *best)) best = &r;
        if (!best) return a;
        *best -= a;
    }
    return 0;
}

std::string listing(const attn::MemoryBudget& budget, const std::vector<std::size_t>& allocations) {
    std::ostringstream out;
    out << "charged:";
    for (const auto& c : budget.charges()) out << "\n  " << c.bytes << "  " << c.what;
    out << "\nallocated:";
    for (const std::size_t a : allocations) out << ' ' << a;
    return out.str();
}

}  // namespace

// AddressSanitizer owns operator new and delete in the sanitizer build (it checks that what one
// allocates the other frees): there the allocations are not counted, and the rest of each test runs.
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_COUNTS_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_COUNTS_ALLOCATIONS 0
#endif
#endif
#ifndef ATTN_COUNTS_ALLOCATIONS
#define ATTN_COUNTS_ALLOCATIONS 1
void* operator new(std::size_t bytes) { return allocate(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t alignment) { return allocate(bytes, std::size_t(alignment)); }
void operator delete(void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
#endif

using attn::Backend;
using attn::Matrix;

TEST_CASE("every buffer the chain allocates was charged to the budget first, on every backend", "[limits][budget]") {
    std::mt19937 rng(57);
    const std::size_t n = 300, m = 280, d_model = 50, d_k = 40, d_v = 24;
    const Matrix X = attn::random_matrix(n, d_model, rng), Q = attn::random_matrix(n, d_k, rng),
                 K = attn::random_matrix(m, d_k, rng), V = attn::random_matrix(m, d_v, rng);
    const attn::SingleHeadAttention layer(attn::random_matrix(d_model, d_k, rng),
                                          attn::random_matrix(d_model, d_k, rng),
                                          attn::random_matrix(d_model, d_v, rng));
    // Read once per process, before any call is counted: the caches the kernels' blocks come from
    // (each file through an ifstream with its own 8 KiB buffer). Not a buffer of the chain.
    (void)attn::simd::blocking();
    if (!ATTN_COUNTS_ALLOCATIONS)
        WARN("allocations not counted: AddressSanitizer owns operator new in this build (the other builds count them)");
    for (const auto& run : {std::pair{Backend::naive, attn::Dtype::f32},
                            {Backend::simd, attn::Dtype::f32},
                            {Backend::parallel, attn::Dtype::f32},
                            {Backend::fused, attn::Dtype::f32},
                            {Backend::fused, attn::Dtype::bf16}}) {
        const auto [b, dtype] = run;
        for (const bool whole_layer : {false, true}) {
            INFO(attn::to_string(b) << ", " << attn::to_string(dtype)
                                    << (whole_layer ? ", the layer's forward" : ", the core"));
            attn::MemoryBudget budget(std::uint64_t{1} << 30, "the test's budget");
            attn::AttentionResult result;
            const auto allocations = allocations_of([&] {
                const attn::AttentionOptions options{.backend = run.first, .budget = &budget, .dtype = run.second};
                result = whole_layer ? layer.forward(X, options) : attn::scaled_dot_product_attention(Q, K, V, options);
            });
            INFO(listing(budget, allocations));
            if (ATTN_COUNTS_ALLOCATIONS) {
                CHECK(!allocations.empty());
                CHECK(uncharged(allocations, budget) == 0);
            }
            // the results' own sizes were charged under their names
            const auto charged = [&](const std::string& start, const Matrix& M) {
                return std::any_of(budget.charges().begin(), budget.charges().end(), [&](const auto& c) {
                    return c.what.starts_with(start) && c.bytes == M.size() * sizeof(float);
                });
            };
            CHECK(charged("O (", result.output));
            if (b != Backend::fused) CHECK(charged("S/α (", result.weights));
            if (whole_layer) CHECK(charged("Q (", Matrix(n, d_k)));
        }
    }
}

TEST_CASE("every buffer the backward allocates was charged first, on every backend", "[limits][budget][backward]") {
    std::mt19937 rng(59);
    const std::size_t n = 300, d_model = 50, d_k = 40, d_v = 24;
    const Matrix X = attn::random_matrix(n, d_model, rng), dO = attn::random_matrix(n, d_v, rng);
    const attn::SingleHeadAttention layer(attn::random_matrix(d_model, d_k, rng),
                                          attn::random_matrix(d_model, d_k, rng),
                                          attn::random_matrix(d_model, d_v, rng));
    const auto p = layer.project(X);
    (void)attn::simd::blocking();
    for (const Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        for (const bool whole_layer : {false, true}) {
            INFO(attn::to_string(b) << (whole_layer ? ", the layer's forward and backward" : ", the core's"));
            attn::MemoryBudget budget(std::uint64_t{1} << 30, "the test's budget");
            const auto allocations = allocations_of([&] {
                const attn::AttentionOptions options{.causal = whole_layer, .backend = b, .budget = &budget};
                if (whole_layer) (void)layer.forward_backward(X, dO, options);
                else (void)attn::attention_forward_backward(p.Q, p.K, p.V, dO, options);
            });
            INFO(listing(budget, allocations));
            if (ATTN_COUNTS_ALLOCATIONS) {
                CHECK(!allocations.empty());
                CHECK(uncharged(allocations, budget) == 0);
            }
            const auto charged = [&](const std::string& start) {
                return std::any_of(budget.charges().begin(), budget.charges().end(),
                                   [&](const auto& c) { return c.what.starts_with(start); });
            };
            CHECK(charged("dQ (300×40)"));
            CHECK(charged(b == Backend::fused ? "the fused backward's scratch" : "dα, then dS (300×300)"));
            if (whole_layer) CHECK(charged("dW_Q (50×40)"));
        }
    }
}

TEST_CASE("a budget too small for the backward refuses before the first step, naming the buffer",
          "[limits][budget][backward]") {
    std::mt19937 rng(60);
    const Matrix Q = attn::random_matrix(300, 40, rng), V = attn::random_matrix(300, 8, rng),
                 dO = attn::random_matrix(300, 8, rng);
    // the forward's S/α (360000 bytes) fits; the backward's dα/dS beside it does not
    attn::MemoryBudget budget(600000, "the test's budget");
    CHECK_THROWS_WITH(attn::attention_forward_backward(Q, Q, V, dO, {.backend = Backend::parallel, .budget = &budget}),
                      Catch::Contains("dα, then dS (300×300)") && Catch::Contains("the test's budget"));
}

TEST_CASE("a budget too small refuses before the first step, naming the buffer", "[limits][budget]") {
    std::mt19937 rng(58);
    const Matrix Q = attn::random_matrix(300, 40, rng), K = attn::random_matrix(300, 40, rng);
    attn::MemoryBudget budget(200000, "the test's budget");  // S alone is 360000 bytes
    attn::AttentionResult result;
    CHECK_THROWS_WITH(
        attn::scaled_dot_product_attention_into(Q, K, K, {.backend = Backend::parallel, .budget = &budget}, result),
        Catch::Contains("S/α (300×300) of steps 3–5 on the parallel backend"));
    CHECK(result.output.empty());  // nothing computed, nothing allocated
    CHECK(result.weights.empty());
}

// Many heads free each head's scratch before the next head (on the same thread) allocates its own: what
// must have been charged is the most the call holds at once.
TEST_CASE("the most many heads hold at once was charged first, forward and backward, on every backend",
          "[limits][budget][heads]") {
    std::mt19937 rng(61);
    // 16 heads: with two threads or more they run several at once, each with its own scratch
    const attn::HeadsShape q{2, 8, 70, 24}, kv{2, 4, 90, 24};
    const auto random_heads = [&](attn::HeadsShape s) {
        return attn::Heads{attn::random_matrix(s.batch * s.heads * s.rows, s.cols, rng), s};
    };
    const attn::Heads Q = random_heads(q), K = random_heads(kv), V = random_heads(kv), dO = random_heads(q);
    (void)attn::simd::blocking();
    for (const Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        INFO(attn::to_string(b));
        attn::MemoryBudget budget(std::uint64_t{1} << 30, "the test's budget");
        const attn::AttentionOptions options{
            .causal = true, .backend = b, .budget = &budget, .keep_for_backward = true};
        attn::HeadsResult result;  // empty: nothing of an earlier round is freed while counting
        const auto forward =
            allocations_of([&] { result = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options); });
        INFO(listing(budget, forward));
        if (ATTN_COUNTS_ALLOCATIONS) {
            CHECK(!forward.empty());
            CHECK(peak.load() <= budget.used());
        }
        CHECK(budget.charges().front().what == "O (2×8×70×24) of step 6");
        attn::MemoryBudget backward_budget(std::uint64_t{1} << 30, "the test's budget");
        attn::AttentionOptions backward_options = options;
        backward_options.budget = &backward_budget;
        const auto backward = allocations_of([&] {
            (void)attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), result, dO.view(),
                                                              backward_options);
        });
        INFO(listing(backward_budget, backward));
        if (ATTN_COUNTS_ALLOCATIONS) {
            CHECK(!backward.empty());
            CHECK(peak.load() <= backward_budget.used());
        }
        CHECK(backward_budget.charges().front().what == "dQ (2×8×70×24) of grad 3");
    }
}
