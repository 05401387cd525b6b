// The library at its edges: crafted sizes, out-of-range values, d_k = 0, overflow, the memory a run
// needs, and output files that must be all or nothing. One TEST_CASE per way these went wrong.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <thread>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "attention/run.hpp"
#include "io/io.hpp"
#include "matrix/ops.hpp"
#include "matrix/random.hpp"
#include "matrix/size.hpp"
#include "simd/simd.hpp"
#include "temp_dir.hpp"

using attn::random_matrix;

using attn::Backend;
using attn::Matrix;
using attn::Scale;
using attn::ScoreMask;
using Catch::Contains;

namespace {

// How a forked child ended: its exit status, or -1 when a signal ended it.
int exit_status_of(pid_t child) {
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

constexpr Backend all_backends[] = {Backend::naive, Backend::simd, Backend::parallel, Backend::fused};

// The .npy of a matrix with no columns, whose header may claim any number of rows: 128 bytes.
std::string zero_width_npy(std::size_t rows) { return attn::npy_bytes(Matrix(rows, 0)); }

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

// Runs `check` in a child process as the user "nobody" (65534), to whom `dir` is given, except
// for `dir/keep_root`, which stays root's and becomes sticky and world-writable. Needs root.
bool as_other_user(const TempDir& dir, const std::string& keep_root, const std::function<bool()>& check) {
    if (::chown(dir.path.c_str(), 65534, 65534) != 0) return false;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path))
        if (entry.path().filename() != keep_root && ::lchown(entry.path().c_str(), 65534, 65534) != 0) return false;
    std::filesystem::permissions(dir.path / keep_root, std::filesystem::perms(01777));
    const pid_t child = ::fork();
    if (child == 0) ::_exit(::setgid(65534) == 0 && ::setuid(65534) == 0 && check() ? 0 : 1);
    int status = 1;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("size products are checked: a shape whose float count overflows is refused, not wrapped", "[limits][sizes]") {
    CHECK(attn::checked_product(1u << 20, 1u << 20, "t") == std::uint64_t{1} << 40);
    CHECK_THROWS_AS(attn::checked_product(std::uint64_t{1} << 32, std::uint64_t{1} << 32, "t"), std::length_error);
    CHECK_THROWS_AS(attn::checked_sum(~std::uint64_t{0}, 1, "t"), std::length_error);
    CHECK_THROWS_WITH(attn::matrix_bytes(std::uint64_t{1} << 62, 1), Contains("4611686018427387904×1"));
    // 2³²×2³² floats is 2⁶⁴: it wrapped to an empty buffer that every kernel then wrote past.
    CHECK_THROWS_AS(Matrix(std::size_t{1} << 32, std::size_t{1} << 32), std::length_error);
    CHECK_THROWS_WITH(Matrix(std::size_t{1} << 61, 1), Contains("Matrix: shape 2305843009213693952×1"));
    Matrix m(2, 2, 1.0f);
    CHECK_THROWS_AS(m.resize_for_overwrite(std::size_t{1} << 33, std::size_t{1} << 33), std::length_error);
    CHECK(m.rows() == 2);  // a refused resize leaves the matrix as it was
    CHECK(m(1, 1) == 1.0f);
}

// What a single head's call on Q (n×d_k), K (m×d_k) and V (m×d_v) would allocate, by the library's own
// plan (attn::plan reads the shapes alone: no data is needed).
std::uint64_t planned_bytes(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, Backend b) {
    static const float nothing = 0.0f;  // never read
    const std::size_t q[] = {n, d_k}, k[] = {m, d_k}, v[] = {m, d_v};
    const attn::Call call{.Q = attn::View{&nothing, q},
                          .K = attn::View{&nothing, k},
                          .V = attn::View{&nothing, v},
                          .options = {.backend = b}};
    std::uint64_t total = 0;
    for (const attn::Buffer& buffer : attn::plan(call)) total += buffer.bytes;
    return total;
}

TEST_CASE("crafted zero-width .npy files claiming 2³², 2⁶² or 2⁶³+1 rows are refused by every backend",
          "[limits][sizes]") {
    const Matrix Q = attn::parse_npy(zero_width_npy(std::size_t{1} << 32), "q.npy");  // 128 bytes, no data
    REQUIRE(Q.rows() == std::size_t{1} << 32);
    for (Backend b : all_backends) {
        INFO(attn::to_string(b));
        // d_k = 0 is refused before the 2³²×2³² score matrix could be attempted
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q, Q, Q, {.backend = b}), Contains("E = 0"));
        // X (2⁶², 0) with W (0, 4): Q would be 2⁶²×4 floats
        const Matrix X = attn::parse_npy(zero_width_npy(std::size_t{1} << 62), "x.npy");
        const attn::SingleHeadAttention layer(Matrix(0, 4), Matrix(0, 4), Matrix(0, 4));
        CHECK_THROWS_AS(layer.forward(X, {.backend = b}), std::length_error);
    }
    const Matrix huge = attn::parse_npy(zero_width_npy((std::size_t{1} << 63) + 1), "q.npy");
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(huge, Matrix(2, 0), Matrix(2, 0)), Contains("E = 0"));
    CHECK_THROWS_AS(planned_bytes(std::size_t{1} << 32, std::size_t{1} << 32, 1, 1, Backend::parallel),
                    std::length_error);
}

TEST_CASE("CSV values beyond float32 are refused with line and column; tiny ones round to 0", "[limits][csv]") {
    CHECK_THROWS_WITH(attn::parse_csv("7,1e39,1e-50,3\n", "r.csv"),
                      Contains("r.csv: line 1, value 2 ('1e39') is outside the range of float32"));
    CHECK_THROWS_WITH(attn::parse_csv("1,2\n3,-4e38\n", "r.csv"), Contains("line 2, value 2 ('-4e38')"));
    CHECK_THROWS_WITH(attn::parse_csv("1e400\n", "r.csv"), Contains("outside the range of float32"));
    // first value of a row out of range: refused before any uninitialised float is read
    CHECK_THROWS_WITH(attn::parse_csv("1,2\n1e39,5\n", "r.csv"), Contains("line 2, value 1"));
    CHECK(attn::parse_csv("7,1e-50,3\n", "r.csv") == Matrix{{7.0f, 0.0f, 3.0f}});  // as numpy.float32(1e-50)
    // Below double's smallest too: the same 0 (these were refused as "outside the range of float32").
    CHECK(attn::parse_csv("1e-400,2e-324,1e-46\n", "r.csv") == Matrix{{0.0f, 0.0f, 0.0f}});
    CHECK(attn::parse_csv("-1e-400\n", "r.csv")(0, 0) == 0.0f);
    // One sign at most, as NumPy and Python read numbers ("+-1" is not -1).
    CHECK_THROWS_WITH(attn::parse_csv("1,+-1\n", "r.csv"), Contains("value 2") && Contains("'+-1'"));
    CHECK_THROWS_WITH(attn::parse_csv("+-0\n", "r.csv"), Contains("not numeric ('+-0')"));
    CHECK_THROWS_WITH(attn::parse_csv("++1\n", "r.csv"), Contains("not numeric ('++1')"));
    CHECK(attn::parse_csv("+1,-1\n", "r.csv") == Matrix{{1.0f, -1.0f}});
    CHECK(attn::parse_csv("3.4e38\n", "r.csv")(0, 0) == 3.4e38f);
}

TEST_CASE("E = d_k = 0 is refused at the API, by every backend, with the shapes named", "[limits][dk0]") {
    for (Backend b : all_backends) {
        INFO(attn::to_string(b));
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Matrix(3, 0), Matrix(3, 0), Matrix(3, 2), {.backend = b}),
                          Contains("scaled_dot_product_attention: E = 0: Q (3×0) and K (3×0)"));
    }
    CHECK_THROWS_WITH(attn::SingleHeadAttention(Matrix(4, 0), Matrix(4, 0), Matrix(4, 2)),
                      Contains("SingleHeadAttention: d_k = 0") && Contains("W_Q (4×0)"));
    // d_v = 0 is fine: an empty output row per query
    CHECK(attn::scaled_dot_product_attention(Matrix(3, 2, 1.0f), Matrix(3, 2, 1.0f), Matrix(3, 0)).output.cols() == 0);
}

TEST_CASE("values that would leave float32 range are refused alike by every backend, naming the step",
          "[limits][overflow]") {
    const Matrix one{{1, -1}, {1, 1}};
    const Matrix big_q{{3e38f, -3e38f}, {3e38f, 3e38f}};
    Matrix big_identity(3, 3);
    for (std::size_t i = 0; i < 3; ++i) big_identity(i, i) = 1e30f;
    const Matrix big_v{{3e38f, 1.0f}, {3e38f, 2.0f}};
    for (Backend b : all_backends) {
        INFO(attn::to_string(b));
        const attn::AttentionOptions o{.backend = b};
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(big_q, one, one, o), Contains("step 3 (S = Q·Kᵀ)"));
        CHECK_THROWS_AS(attn::scaled_dot_product_attention(big_identity, big_identity, Matrix(3, 1, 1.0f), o),
                        std::overflow_error);
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(one, one, big_v, o), Contains("step 6 (O = α·V"));
        const Matrix nan{{NAN, 1.0f}};
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(nan, one, one, o), Contains("Q (1×2) holds NaN or ±inf"));
        const attn::SingleHeadAttention layer(Matrix(2, 2, 1e20f), Matrix(2, 2, 1.0f), Matrix(2, 2, 1.0f));
        CHECK_THROWS_WITH(layer.forward(Matrix(1, 2, 1e20f), o), Contains("step 2 (Q = X·W_Q)"));
    }
    // Just inside the bound, every backend gives finite results that agree with naive.
    const Matrix q{{1e18f, 0.0f}}, k{{1e18f, 0.0f}, {0.0f, 1e18f}}, v{{5e37f, -5e37f}, {1.0f, 2.0f}};
    const Matrix want = attn::scaled_dot_product_attention(q, k, v).output;
    CHECK(std::isfinite(want(0, 0)));
    for (Backend b : all_backends)
        CHECK(attn::scaled_dot_product_attention(q, k, v, {.backend = b}).output(0, 0) ==
              Approx(want(0, 0)).epsilon(1e-6));
}

TEST_CASE("the scores the kernels add up count the scale and the mask's terms: past float32, refused by all",
          "[limits][overflow]") {
    // ‖q‖·‖k‖ = 1e10 is far inside float32, but 1e30 times it is not
    const Matrix q(2, 1, 1e5f), k(3, 1, 1e5f), v(3, 2, 1.0f);
    // S = 1.4e38 is inside (step 3), but a term of 3e38 on it is not; −3.4e38 (float32's lowest) is
    const Matrix big_q(2, 1, 1.4e19f), big_k(3, 1, 1e19f), up(2, 3, 3e38f), down(2, 3, -3.4e38f);
    const ScoreMask terms_up{.data = up.data(), .row_stride = 3, .col_stride = 1},
        terms_down{.data = down.data(), .row_stride = 3, .col_stride = 1};
    for (Backend b : all_backends) {
        INFO(attn::to_string(b));
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, v, {.explicit_scale = 1e30f, .backend = b}),
                          Contains("step 4 (S' = scale·S + M, the mask's terms M added) could leave the float32 "
                                   "range: scale·max‖q_i‖·max‖k_j‖ + ½·(the largest finite term of the mask) = 1e+40"));
        CHECK(std::isfinite(
            attn::scaled_dot_product_attention(q, k, v, {.explicit_scale = 1e27f, .backend = b}).output(0, 0)));
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(big_q, big_k, v,
                                                             {.mask = &terms_up, .scale = Scale::none, .backend = b}),
                          Contains("step 4") && Contains("= 2.9e+38"));
        const Matrix out = attn::scaled_dot_product_attention(big_q, big_k, v,
                                                              {.mask = &terms_down, .scale = Scale::none, .backend = b})
                               .output;
        CHECK(std::none_of(out.data(), out.data() + out.size(), [](float x) { return std::isnan(x); }));
        // and the backward, which recomputes the scores, by the same bound
        CHECK_THROWS_WITH(
            attn::attention_forward_backward(q, k, v, Matrix(2, 2, 1.0f), {.explicit_scale = 1e30f, .backend = b}),
            Contains("step 4"));
    }
}

TEST_CASE(
    "large operands are checked in pieces over the team: a bad row anywhere is found, a rare row measured exactly",
    "[limits][range]") {
    // 512 rows of 64: a call that starts a team, whose checks split the rows into pieces of 256 rows.
    std::mt19937 rng(71);
    const Matrix Q = attn::random_matrix(512, 64, rng), K = attn::random_matrix(512, 64, rng);
    for (Backend b : all_backends)
        for (const int threads : {1, 2})
            for (const std::size_t row : {std::size_t{0}, std::size_t{300}, std::size_t{511}}) {
                INFO(attn::to_string(b) << ", " << threads << " threads, bad row " << row);
                const attn::AttentionOptions o{.threads = threads, .backend = b};
                Matrix V = K;
                V(row, 63) = NAN;
                CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q, K, V, o), Contains("V (512×64) holds NaN"));
                V(row, 63) = -INFINITY;
                CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q, K, V, o), Contains("V (512×64) holds NaN"));
                // A square beyond float (1e20² > FLT_MAX) with a product inside it: measured in double, accepted.
                Matrix big_q = Q, tiny_k = K;
                big_q(row, 5) = 1e20f;
                for (float& x : std::span(tiny_k.data(), tiny_k.size())) x *= 1e-22f;  // squares below 2⁻⁶⁰
                const Matrix out = attn::scaled_dot_product_attention(big_q, tiny_k, K, o).output;
                CHECK(std::all_of(out.data(), out.data() + out.size(), [](float x) { return std::isfinite(x); }));
                // … and a row just past the bound of step 3 is refused, whichever piece it is in.
                big_q(row, 5) = 3e19f;
                Matrix big_k = K;
                big_k(511 - row, 7) = 1e19f;
                CHECK_THROWS_WITH(attn::scaled_dot_product_attention(big_q, big_k, K, o),
                                  Contains("step 3 (S = Q·Kᵀ)"));
            }
}

TEST_CASE("the memory a call needs is known before it allocates, and a budget refuses with the sizes",
          "[limits][memory]") {
    // Q, K, V of 65536×16 (12 MiB of input) need a 16 GiB S on the materialised backends.
    const std::uint64_t S = std::uint64_t{65536} * 65536 * 4;
    for (Backend b : {Backend::naive, Backend::simd, Backend::parallel})
        CHECK(planned_bytes(65536, 65536, 16, 16, b) >= S);
    CHECK(planned_bytes(65536, 65536, 16, 16, Backend::fused) < (std::uint64_t{64} << 20));
    // The fused scratch does not grow with d_v: only O does (4 bytes a column of each of O's 3 rows;
    // fewer rows go to the decode kernel, whose blocks keep d_v-wide sums), and the kernel's packed
    // copy of V (a row of each of its m = 1 keys, in panels of whole tile columns).
    CHECK(planned_bytes(3, 1, 4, 2621440, Backend::fused) ==
          planned_bytes(3, 1, 4, 16, Backend::fused) + 3 * 4 * (2621440 - 16) +
              attn::simd::fused_packed_bytes(1, 4, 2621440) - attn::simd::fused_packed_bytes(1, 4, 16));
    // Empty sizes are counted too, and need no scratch for the GEMM (the fuzzer found d_model = 0
    // divided by a zero depth: a 0×0 X of a layer); E = 0 is refused before anything is planned.
    for (Backend b : all_backends) {
        for (std::size_t width : {0, 3, 1000}) {  // narrow and wide products of no depth
            CHECK_NOTHROW(attn::backends::projection_buffers(width, 0, width, width, b));
            CHECK_THROWS_WITH(planned_bytes(5, width, 0, width, b), Contains("E = 0"));
        }
    }
    CHECK(attn::simd::gemm_scratch_bytes(5, 0, 1000) == 0);
    attn::MemoryBudget budget(std::uint64_t{8} << 30, "the --max-memory limit");
    budget.charge(12 << 20, "inputs");
    CHECK_THROWS_WITH(budget.charge(S, "S"),
                      Contains("S needs 16 GiB on top of 12 MiB already taken") && Contains("limit of 8 GiB"));
    CHECK(budget.used() == 12 << 20);
}

TEST_CASE("writing is all or nothing: a failed second file leaves the first as it was", "[limits][output]") {
    const TempDir dir;
    const Matrix old_m(2, 2, 1.0f), new_m(3, 3, 2.0f);
    const std::string first = dir.file("output.npy", old_m);
    std::filesystem::create_directory(dir.at("attn.npy"));  // a directory where the second file goes
    CHECK_THROWS_WITH(attn::write_npy_files({{first, &new_m}, {dir.at("attn.npy"), &new_m}}),
                      Contains("attn.npy: cannot write: a directory of that name is in the way"));
    CHECK(attn::read_matrix(first) == old_m);
    CHECK(dir.listing() == std::vector<std::string>{"attn.npy", "output.npy"});  // no temporaries
    // A rename that fails after the first file is in place: the first gets its old contents back.
    // The failure: the second target belongs to root in a sticky, world-writable directory (as
    // /tmp is), and the write runs as another user, who may create files there but not replace it.
    if (::geteuid() != 0) {
        WARN("skipped the rollback half: it needs root to set up a file another user may not replace");
        return;
    }
    std::filesystem::remove(dir.at("attn.npy"));
    std::filesystem::create_directory(dir.at("sticky"));
    const Matrix second_old(1, 1, 7.0f);
    const std::string second = dir.file("sticky/attn.npy", second_old);
    std::filesystem::permissions(second, std::filesystem::perms(0666));
    const auto write_both = [&] {
        const std::string error = message_of([&] { attn::write_npy_files({{first, &new_m}, {second, &new_m}}); });
        return error.find("sticky/attn.npy: cannot replace it") != std::string::npos &&
               attn::read_matrix(first) == old_m && attn::read_matrix(second) == second_old;
    };
    CHECK(as_other_user(dir, "sticky", write_both));
    CHECK(dir.listing() == std::vector<std::string>{"output.npy", "sticky"});
    CHECK(std::distance(std::filesystem::directory_iterator(dir.at("sticky")), {}) == 1);  // no temporary left
}

TEST_CASE("a symlink planted beside the target is never written through", "[limits][output]") {
    const TempDir dir;
    const Matrix victim_m(1, 1, 5.0f), m(2, 2, 1.0f);
    const std::string victim = dir.file("victim.npy", victim_m);
    // A predictable temporary name (target + ".tmp-" + pid) could be planted: plant links at that
    // name and at the target itself; temporaries are random and created with O_EXCL.
    std::filesystem::create_symlink(victim, dir.at("output.npy.tmp-" + std::to_string(::getpid())));
    std::filesystem::create_symlink(victim, dir.at("output.npy"));  // even the target itself is a link
    CHECK_THROWS_WITH(attn::write_npy_files({{dir.at("output.npy"), &m}}), Contains("not a regular file"));
    CHECK(attn::read_matrix(victim) == victim_m);
    std::filesystem::remove(dir.at("output.npy"));
    attn::write_npy_files({{dir.at("output.npy"), &m}});
    CHECK(attn::read_matrix(dir.at("output.npy")) == m);
    CHECK(attn::read_matrix(victim) == victim_m);
    CHECK(!std::filesystem::is_symlink(dir.at("output.npy")));
}

TEST_CASE("SIGTERM or SIGQUIT during a write removes the temporary, and the process still dies of it",
          "[limits][output]") {
    const int signal = GENERATE(SIGTERM, SIGQUIT);
    INFO("signal " << signal);
    const TempDir dir;
    const Matrix big(8192, 8192, 1.0f);  // 256 MiB: the write takes long enough to be interrupted
    bool caught_in_flight = false;
    for (int attempt = 0; attempt < 5 && !caught_in_flight; ++attempt) {
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            const rlimit no_core{0, 0};
            setrlimit(RLIMIT_CORE, &no_core);  // SIGQUIT's default action dumps core
            // As a program started from a terminal has it. (A background job of a script starts with
            // SIGINT and SIGQUIT ignored, and remove_temporaries_on_signals rightly leaves them so.)
            ::signal(signal, SIG_DFL);
            attn::remove_temporaries_on_signals();
            attn::write_npy_files({{dir.at("output.npy"), &big}});
            ::_exit(0);
        }
        // Wait for the temporary to appear, then interrupt.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!caught_in_flight && std::chrono::steady_clock::now() < deadline) {
            for (const auto& name : dir.listing()) caught_in_flight |= name.starts_with(".output.npy.tmp-");
            if (!caught_in_flight) std::this_thread::sleep_for(std::chrono::microseconds(200));
            if (std::filesystem::exists(dir.at("output.npy"))) break;  // too late: it finished first
        }
        if (caught_in_flight) ::kill(child, signal);
        int status = 0;
        ::waitpid(child, &status, 0);
        if (caught_in_flight) {
            CHECK(WIFSIGNALED(status));
            CHECK(WTERMSIG(status) == signal);
        }
        std::filesystem::remove(dir.at("output.npy"));
    }
    REQUIRE(caught_in_flight);
    CHECK(dir.listing().empty());
}

// `nohup attn run …` ignores SIGHUP so that the run survives its terminal: the handlers must not
// undo that. Checked in a child, which reports the disposition it ends up with.
TEST_CASE("a signal ignored at start stays ignored; the others get the handler", "[limits][output]") {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::signal(SIGHUP, SIG_IGN);
        ::signal(SIGINT, SIG_DFL);
        attn::remove_temporaries_on_signals();
        struct sigaction hup {
        }, intr{};
        sigaction(SIGHUP, nullptr, &hup);
        sigaction(SIGINT, nullptr, &intr);
        ::_exit(hup.sa_handler == SIG_IGN && intr.sa_handler != SIG_DFL && intr.sa_handler != SIG_IGN ? 0 : 1);
    }
    CHECK(exit_status_of(child) == 0);
}

// `ulimit -f` during a write: SIGXFSZ would kill the process (status 153) and leave the partial
// temporary; the write must fail as any other write does, and leave nothing.
TEST_CASE("a write past the file-size limit is a write error, and leaves no temporary", "[limits][output]") {
    const TempDir dir;
    const Matrix big(512, 512, 1.0f);  // 1 MiB of floats, past a 64 KiB limit
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        attn::remove_temporaries_on_signals();
        const rlimit small{65536, 65536};
        setrlimit(RLIMIT_FSIZE, &small);
        try {
            attn::write_npy_files({{dir.at("output.npy"), &big}});
        } catch (const std::exception&) {
            ::_exit(3);  // refused as an error: what the caller can report
        }
        ::_exit(0);
    }
    CHECK(exit_status_of(child) == 3);
    CHECK(dir.listing().empty());
}

TEST_CASE("a replaced file keeps its permissions; a new one gets what the umask gives", "[limits][output]") {
    const TempDir dir;
    const Matrix m(2, 3, 1.0f);
    const auto mode_of = [&](const char* name) {
        struct stat st {};
        REQUIRE(::stat(dir.at(name).c_str(), &st) == 0);
        return st.st_mode & 0777;
    };
    const mode_t before = ::umask(022);
    attn::write_npy_files({{dir.at("output.npy"), &m}, {dir.at("attn.npy"), &m}});
    CHECK(mode_of("output.npy") == 0644);
    REQUIRE(::chmod(dir.at("output.npy").c_str(), 0600) == 0);  // the user keeps results private
    REQUIRE(::chmod(dir.at("attn.npy").c_str(), 0640) == 0);
    attn::write_npy_files({{dir.at("output.npy"), &m}, {dir.at("attn.npy"), &m}});
    CHECK(mode_of("output.npy") == 0600);  // was widened to 0644 by the previous code
    CHECK(mode_of("attn.npy") == 0640);
    ::umask(before);
}

TEST_CASE("a result that is one of its own inputs is refused, on every backend", "[limits][alias]") {
    std::mt19937 rng(19);
    const Matrix Q0 = random_matrix(6, 4, rng), K0 = random_matrix(6, 4, rng), V0 = random_matrix(6, 4, rng);
    for (const Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        for (const int input : {0, 1, 2}) {
            for (const bool into_output : {true, false}) {
                INFO(attn::to_string(b) << ", input " << input << (into_output ? " as output" : " as weights"));
                attn::AttentionResult r;
                Matrix& slot = into_output ? r.output : r.weights;
                slot = input == 0 ? Q0 : input == 1 ? K0 : V0;
                const Matrix& Q = input == 0 ? slot : Q0;
                const Matrix& K = input == 1 ? slot : K0;
                const Matrix& V = input == 2 ? slot : V0;
                CHECK_THROWS_WITH(attn::scaled_dot_product_attention_into(Q, K, V, {.backend = b}, r),
                                  Contains(std::string("is ") + "QKV"[input] + " itself"));
                CHECK(slot == (input == 0 ? Q0 : input == 1 ? K0 : V0));  // untouched
            }
        }
    }
}

// Renaming the old file aside before renaming the new one in would leave a reader polling the target
// an instant with no file, hundreds of times over a hundred replacements.
TEST_CASE("a reader polling a file being replaced always finds it", "[limits][output]") {
    const TempDir dir;
    const Matrix m(64, 64, 1.0f);
    attn::write_npy_files({{dir.at("output.npy"), &m}});
    const std::string stop = dir.at("stop");
    const pid_t reader = ::fork();
    REQUIRE(reader >= 0);
    if (reader == 0) {  // counts the times output.npy is not there, until told to stop
        int missing = 0;
        while (::access(stop.c_str(), F_OK) != 0)
            if (::access(dir.at("output.npy").c_str(), F_OK) != 0) ++missing;
        ::_exit(std::min(missing, 255));
    }
    for (int round = 0; round < 300; ++round) attn::write_npy_files({{dir.at("output.npy"), &m}});
    std::ofstream(stop) << "";
    CHECK(exit_status_of(reader) == 0);  // the number of times output.npy was missing
}

// Two runs writing the same directory could mix their pairs (output.npy from one, attn.npy from
// the other). Writers hold an flock on the directory from the first temporary to the last rename;
// a reader that takes the same lock must always find both files from one write.
TEST_CASE("concurrent writers of one directory never leave a mixed pair", "[limits][output]") {
    const TempDir dir;
    const auto write_pair = [&](float id) {
        const Matrix m(32, 32, id);
        attn::write_npy_files({{dir.at("output.npy"), &m}, {dir.at("attn.npy"), &m}});
    };
    write_pair(0.0f);
    pid_t writers[2];
    for (int w = 0; w < 2; ++w) {
        writers[w] = ::fork();
        REQUIRE(writers[w] >= 0);
        if (writers[w] == 0) {
            for (int round = 0; round < 150; ++round) write_pair(float(1 + w));
            ::_exit(0);
        }
    }
    int mixed = 0, looks = 0;
    for (bool running = true; running;) {
        const int fd = ::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY);
        REQUIRE(fd >= 0);
        ::flock(fd, LOCK_EX);
        mixed += attn::read_matrix(dir.at("output.npy"))(0, 0) != attn::read_matrix(dir.at("attn.npy"))(0, 0);
        ++looks;
        ::close(fd);
        int status = 0;
        running = ::waitpid(writers[0], &status, WNOHANG) == 0 || ::waitpid(writers[1], &status, WNOHANG) == 0;
    }
    for (const pid_t w : writers) ::waitpid(w, nullptr, 0);
    INFO(looks << " looks");
    CHECK(mixed == 0);
    CHECK(attn::read_matrix(dir.at("output.npy")) == attn::read_matrix(dir.at("attn.npy")));
}

TEST_CASE("regular files only: a directory or a FIFO given as input is refused at once", "[limits][io]") {
    const TempDir dir;
    std::filesystem::create_directory(dir.at("d.npy"));
    CHECK_THROWS_WITH(attn::read_matrix(dir.at("d.npy")), Contains("d.npy: is a directory"));
    REQUIRE(::mkfifo(dir.at("f.csv").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(attn::read_matrix(dir.at("f.csv")), Contains("f.csv: is not a regular file"));
}

TEST_CASE("differential: on random accepted inputs every backend agrees with naive within a float32 bound",
          "[limits][differential]") {
    std::mt19937 rng(2026);
    for (int round = 0; round < 60; ++round) {
        const std::size_t n = 1 + rng() % 40, m = 1 + rng() % 40, d_k = 1 + rng() % 20, d_v = rng() % 20;
        const bool causal = rng() % 2 == 0;
        const float spread = std::ldexp(1.0f, static_cast<int>(rng() % 8) - 2);  // scores from gentle to peaked
        const Matrix Q = random_matrix(n, d_k, rng, -spread, spread),
                     K = random_matrix(causal ? n : m, d_k, rng, -spread, spread);
        const Matrix V = random_matrix(K.rows(), d_v, rng, -4.0f, 4.0f);
        const auto want = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal});
        for (Backend b : all_backends) {
            INFO("round " << round << ", " << attn::to_string(b) << ", n=" << n << " m=" << K.rows() << " d_k=" << d_k
                          << " d_v=" << d_v);
            const auto got = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal, .backend = b});
            REQUIRE(got.output.rows() == want.output.rows());
            REQUIRE(got.output.cols() == want.output.cols());
            // |o_ij| ≤ max|v|: an error of 1e-5·max|v| is ~100 float32 roundings of the largest term
            for (std::size_t k = 0; k < want.output.size(); ++k)
                CHECK(std::fabs(got.output.data()[k] - want.output.data()[k]) <=
                      1e-5f * 4.0f * (1 + float(d_k) * spread * spread));
        }
    }
}
