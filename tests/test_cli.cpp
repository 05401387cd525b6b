// `attn` as a learner runs it: the walkthrough's numbers, languages, colour, and exit codes.
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "attention/heads.hpp"
#include "check_close.hpp"
#include "io/io.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"
#include "matrix/random.hpp"
#include "reference.hpp"
#include "run_attn.hpp"
#include "simd/simd.hpp"
#include "temp_dir.hpp"
#include "walk_output.hpp"

using attn::random_matrix;

using Catch::Contains;
using Catch::StartsWith;

namespace {

attn::AttentionResult library_result(const attn::AttentionOptions& o) {
    return attn::worked_example::layer().forward(attn::worked_example::X(), o);
}

}  // namespace

TEST_CASE("attn walk prints the worked example's numbers", "[cli][walk]") {
    const RunResult r = run_attn("walk");
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    const attn::AttentionTrace tr = attn::worked_example::trace();
    const auto want = library_result({});
    check_matches(matrix_after(r.out, "Step 1"), attn::worked_example::X(), 5e-5);
    check_matches(matrix_after(r.out, "  Q ("), tr.Q, 5e-5);
    check_matches(matrix_after(r.out, "Step 3"), tr.S, 5e-5);
    check_matches(matrix_after(r.out, "Step 4"), tr.S_scaled, 5e-5);
    check_matches(matrix_after(r.out, "Step 5"), want.weights, 5e-5);
    check_matches(matrix_after(r.out, "Step 6"), want.output, 5e-5);
    // The lesson's PyTorch figures, as printed to 4 decimals.
    CHECK(matrix_after(r.out, "Step 5")[0] == std::vector<float>{0.4838f, 0.2844f, 0.2317f});
    CHECK(matrix_after(r.out, "Step 6")[0] == std::vector<float>{0.7502f, 0.2610f, 0.5630f});
    CHECK_THAT(r.out, Contains("S₁₂ = q₁·k₂ = 1.31×(-0.31) + (-0.12)×0.25 + 1.17×0.96 = 0.6871"));
    CHECK_THAT(r.out, Contains("sum = 2.0668"));
    CHECK_THAT(r.out, Contains("‖o₁ − v₁‖ = 0.9338"));
    CHECK_THAT(r.out, Contains("S₂₂ = 1.2631  no, the row's largest score is with 地毯 mat"));
    CHECK_THAT(r.out, Contains("X (3×4) → Q (3×3), K (3×3), V (3×3) → S (3×3)"));
}

TEST_CASE("attn walk --causal --scale dk --lang zh", "[cli][walk]") {
    const RunResult r = run_attn("walk --causal --scale dk --lang zh");
    REQUIRE(r.status == 0);
    const attn::AttentionTrace tr = attn::worked_example::trace({.causal = true, .scale = attn::Scale::dk});
    const auto want = library_result({.causal = true, .scale = attn::Scale::dk});
    CHECK_THAT(r.out, Contains("第 3 步") && Contains("因果掩码") && Contains("S' = S/d_k") && Contains("S' = S/3\n"));
    check_matches(matrix_after(r.out, "第 4½ 步"), tr.S_masked, 5e-5);
    const auto weights = matrix_after(r.out, "第 5 步");
    check_matches(weights, want.weights, 5e-5);
    CHECK(weights[0][1] == 0.0f);
    CHECK(weights[0][2] == 0.0f);
    CHECK(weights[1][2] == 0.0f);
    check_matches(matrix_after(r.out, "第 6 步"), want.output, 5e-5);
}

TEST_CASE("attn walk --scale none and --precision", "[cli][walk]") {
    const RunResult r = run_attn("walk --scale none --precision 6");
    REQUIRE(r.status == 0);
    const auto want = library_result({.scale = attn::Scale::none});
    check_matches(matrix_after(r.out, "Step 5"), want.weights, 5e-7);
    CHECK_THAT(r.out, Contains("S ÷ 1"));
}

TEST_CASE("the language follows LANG unless --lang is given", "[cli][walk]") {
    CHECK_THAT(run_attn("walk", "LANG=zh_CN.UTF-8").out, Contains("第 6 步"));
    CHECK_THAT(run_attn("walk --lang en", "LANG=zh_CN.UTF-8").out, Contains("Step 6"));
    CHECK_THAT(run_attn("walk", "LANG=de_DE.UTF-8").out, Contains("Step 6"));
}

TEST_CASE("matrices with CJK row labels line up column for column", "[cli][walk]") {
    const std::string out = run_attn("walk --lang zh").out;
    const std::string block = out.substr(out.find("第 5 步"));
    std::istringstream in(block);
    std::vector<std::size_t> widths, bracket_columns;
    for (std::string line; std::getline(in, line);) {
        const auto open = line.find('[');
        if (!is_matrix_row(line)) {
            if (!widths.empty()) break;
            continue;
        }
        widths.push_back(attn::display_width(line));
        bracket_columns.push_back(attn::display_width(line.substr(0, open)));
    }
    REQUIRE(widths.size() == 3);
    CHECK(widths[1] == widths[0]);
    CHECK(widths[2] == widths[0]);
    CHECK(bracket_columns[1] == bracket_columns[0]);
    CHECK(bracket_columns[2] == bracket_columns[0]);
}

TEST_CASE("colour: never when piped or with NO_COLOR, always on request, on a terminal by default", "[cli][color]") {
    const std::string esc = "\x1b[";
    CHECK_THAT(run_attn("walk").out, !Contains(esc));
    CHECK_THAT(run_attn("walk --color always").out, Contains(esc) && Contains("heat map"));
    CHECK_THAT(run_attn("walk --color never").out, !Contains(esc));
    // `script` gives the program a pseudo-terminal as stdout, as a learner's terminal would.
    const std::string tty = "script -qec \"" + attn_command() + " walk\" /dev/null";
    const auto on_tty = [&](const std::string& env) {
        const std::string cmd = "env LANG=C.UTF-8 " + env + " " + tty;
        FILE* p = popen(cmd.c_str(), "r");
        std::string out;
        char buf[4096];
        for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
        pclose(p);
        return out;
    };
    CHECK_THAT(on_tty(""), Contains(esc));
    CHECK_THAT(on_tty("NO_COLOR=1"), !Contains(esc) && Contains("Step 6"));
}

TEST_CASE("bad command lines exit 2 with one clear error line", "[cli][errors]") {
    const auto check_error = [](const std::string& args, const std::string& message) {
        INFO("attn " << args);
        const RunResult r = run_attn(args);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Contains("attn: error: ") && Contains(message));
    };
    check_error("walk --bogus", "unknown option '--bogus'");
    check_error("walk --scale cube", "--scale must be one of sqrt, dk and none, got 'cube'");
    check_error("walk --scale", "--scale needs a value");
    check_error("walk --lang fr", "--lang must be en or zh");
    check_error("walk --precision 12", "--precision must be a whole number from 0 to 8");
    check_error("walk --color sometimes", "--color must be auto, always or never");
    check_error("frobnicate", "unknown command 'frobnicate'");
    // Every error of a subcommand's command line names the subcommand where it happened, as the
    // docs/robustness.md says: "attn: error: <where>: <what>", one line.
    const auto check_line = [](const std::string& args, const std::string& line) {
        INFO("attn " << args);
        const RunResult r = run_attn(args);
        CHECK(r.status == 2);
        CHECK(r.err == "attn: error: " + line + "\n");
    };
    check_line("run --q", "run: --q needs a value");
    check_line("walk --scale", "walk: --scale needs a value");
    check_line("exercise 1 --lang", "exercise: --lang needs a value");
    check_line("exercise 6", "exercise: the lesson has no exercise 6; give a number from 1 to 5");
    check_line("exercise 2 --samples 1", "exercise: --samples takes a whole number from 2 to 999999999, got '1'");
    check_line("exercise 3 --largest 8", "exercise: --largest takes a whole number from 16 to 16384, got '8'");
    check_line("variance --seed x", "variance: --seed takes a whole number from 0 to 4294967295, got 'x'");
    check_line("variance 3", "variance: unknown argument '3' (see attn variance --help)");
    const RunResult bare = run_attn("");
    CHECK(bare.status == 2);
    CHECK_THAT(bare.err, Contains("Usage: attn"));
}

TEST_CASE("attn walk --backend simd and parallel print the same numbers as naive", "[cli][walk]") {
    const auto want = library_result({});
    for (const std::string backend : {"simd", "parallel"}) {
        const RunResult r = run_attn("walk --backend " + backend);
        REQUIRE(r.status == 0);
        CHECK_THAT(r.out, Contains("backend " + backend));
        check_matches(matrix_after(r.out, "Step 5"), want.weights, 5e-5);
        check_matches(matrix_after(r.out, "Step 6"), want.output, 5e-5);
    }
    const RunResult fused = run_attn("walk --backend fused");
    CHECK(fused.status == 2);
    CHECK_THAT(fused.err, Contains("without ever storing S or α") && Contains("walks steps 3–6 as it does them"));
    const RunResult bad = run_attn("walk --backend gpu");
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Contains("--backend must be one of naive, simd, parallel and fused, got 'gpu'"));
}

TEST_CASE("attn --version names the instruction set, batch width and threads", "[cli]") {
    const RunResult r = run_attn("--version", "OMP_NUM_THREADS=3");
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Contains("attn 0.1.0") && Contains("simd: ") && Contains("floats per batch"));
    CHECK_THAT(r.out, Contains(attn::build_info().openmp ? "openmp: 3 threads" : "openmp: not built"));
}

TEST_CASE("attn --version lists the instruction sets; ATTN_ISA chooses one, or is refused", "[cli]") {
    const auto compiled = attn::simd::compiled_isas(), supported = attn::simd::supported_isas();
    const RunResult r = run_attn("--version");
    REQUIRE(r.status == 0);
    std::string list;
    for (const std::string& isa : compiled) list += (list.empty() ? "" : " ") + isa;
    CHECK_THAT(r.out, Contains("compiled: " + list + ";"));
    CHECK_THAT(r.out, Contains("simd: " + supported.back() + " "));  // the widest this CPU runs, by default
    for (const std::string& isa : supported) {  // each one this CPU runs can be chosen, and is used
        const RunResult chosen = run_attn("--version", "ATTN_ISA=" + isa);
        CHECK(chosen.status == 0);
        CHECK_THAT(chosen.out, Contains("simd: " + isa + " "));
    }
    const RunResult unknown = run_attn("walk", "ATTN_ISA=avx9000");
    CHECK(unknown.status == 2);
    CHECK(unknown.out.empty());  // refused before any output
    CHECK_THAT(unknown.err,
               Contains("attn: error: ATTN_ISA=avx9000: not an instruction set of this build (compiled: "));
    for (const std::string isa : {"sse2", "avx2", "avx512", "neon"})  // compiled, but this CPU lacks it
        if (std::find(compiled.begin(), compiled.end(), isa) != compiled.end() &&
            std::find(supported.begin(), supported.end(), isa) == supported.end()) {
            const RunResult lacking = run_attn("run --q x --k x --v x", "ATTN_ISA=" + isa);
            CHECK(lacking.status == 2);
            CHECK_THAT(lacking.err, Contains("ATTN_ISA=" + isa + ": this CPU cannot run it"));
        }
}

TEST_CASE("help lists the subcommands and the walk options", "[cli]") {
    const RunResult top = run_attn("--help");
    CHECK(top.status == 0);
    CHECK_THAT(top.out, Contains("walk"));
    const RunResult walk = run_attn("walk --help");
    CHECK(walk.status == 0);
    CHECK_THAT(walk.out, Contains("--causal") && Contains("--scale sqrt|dk|none") && Contains("--precision"));
    CHECK_THAT(run_attn("walk --help --lang zh").out, Contains("用法"));
}

// ---- attn run --------------------------------------------------------------------------------

namespace {

std::string as_csv(const attn::Matrix& m) {
    std::ostringstream out;
    out.precision(9);
    for (std::size_t i = 0; i < m.rows(); ++i)
        for (std::size_t j = 0; j < m.cols(); ++j) out << m(i, j) << (j + 1 < m.cols() ? "," : "\n");
    return out.str();
}

}  // namespace

TEST_CASE("attn run --out writes output.npy and attn.npy equal to the library's result", "[cli][run]") {
    std::mt19937 rng(41);
    const TempDir dir;
    const attn::Matrix Q = random_matrix(9, 5, rng), K = random_matrix(9, 5, rng), V = random_matrix(9, 3, rng);
    const std::string args = "run --q " + dir.file("q.npy", Q) + " --k " + dir.file("k.npy", K) + " --v " +
                             dir.file("v.npy", V) + " --causal --out " + (dir.path / "out").string();
    const RunResult r = run_attn(args);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("output.npy (9×3)") && Contains("attn.npy (9×9)"));
    const auto want = attn::scaled_dot_product_attention(Q, K, V, {.causal = true, .backend = attn::Backend::parallel});
    CHECK(attn::read_matrix((dir.path / "out" / "output.npy").string()) == want.output);
    CHECK(attn::read_matrix((dir.path / "out" / "attn.npy").string()) == want.weights);
}

TEST_CASE("attn run on the worked example from CSV, with lesson and PyTorch weight layouts", "[cli][run]") {
    const TempDir dir;
    namespace ex = attn::worked_example;
    const std::string x = dir.text("x.csv", as_csv(ex::X()));
    const std::string lesson = "run --x " + x + " --wq " + dir.text("wq.csv", as_csv(ex::W_Q())) + " --wk " +
                               dir.text("wk.csv", as_csv(ex::W_K())) + " --wv " + dir.text("wv.csv", as_csv(ex::W_V()));
    const std::string torch = "run --x " + x + " --wq " + dir.text("tq.csv", as_csv(attn::transpose(ex::W_Q()))) +
                              " --wk " + dir.text("tk.csv", as_csv(attn::transpose(ex::W_K()))) + " --wv " +
                              dir.text("tv.csv", as_csv(attn::transpose(ex::W_V()))) + " --torch-weights";
    for (const std::string& args : {lesson + " --backend naive", torch + " --backend simd --time"}) {
        INFO(args);
        const RunResult r = run_attn(args);
        REQUIRE(r.status == 0);
        CHECK(matrix_after(r.out, "output O")[0] == std::vector<float>{0.7502f, 0.2610f, 0.5630f});
        CHECK(matrix_after(r.out, "attention weights")[0] == std::vector<float>{0.4838f, 0.2844f, 0.2317f});
    }
    CHECK_THAT(run_attn(torch + " --time").out, Contains("time: read") && Contains("steps 1–6 (the layer)"));
    const RunResult forgot = run_attn(torch.substr(0, torch.find(" --torch-weights")));
    CHECK(forgot.status == 2);
    CHECK_THAT(forgot.err, Contains("x.csv (3×4) needs d_model = 3 columns to meet ") && Contains("tq.csv (3×4)") &&
                               Contains("pass --torch-weights"));
    // the library's own message, each matrix named by its file as it was raised: nothing rewritten
    CHECK_THAT(forgot.err, Contains("x.csv, ") && Contains("tq.csv, ") &&
                               Contains(": SingleHeadAttention::project: ") && Contains("x.csv (3×4) needs d_model"));
}

TEST_CASE("attn run with the fused backend writes no attn.npy and says why α is missing", "[cli][run]") {
    std::mt19937 rng(42);
    const TempDir dir;
    const attn::Matrix Q = random_matrix(7, 4, rng), K = random_matrix(7, 4, rng), V = random_matrix(7, 2, rng);
    const std::string inputs = "run --backend fused --q " + dir.file("q.npy", Q) + " --k " + dir.file("k.npy", K) +
                               " --v " + dir.file("v.npy", V);
    CHECK_THAT(run_attn(inputs).out, Contains("not formed by the fused backend"));
    REQUIRE(run_attn(inputs + " --out " + (dir.path / "o").string()).status == 0);
    CHECK(std::filesystem::exists(dir.path / "o" / "output.npy"));
    CHECK_FALSE(std::filesystem::exists(dir.path / "o" / "attn.npy"));
    // An attn.npy of an earlier run must not stay beside this run's output as if it were its α:
    // it is removed in the same all-or-nothing step, and the run says so.
    const std::string earlier = inputs.substr(0, inputs.find("--backend fused")) + "--backend naive" +
                                inputs.substr(inputs.find("--backend fused") + 15);
    REQUIRE(run_attn(earlier + " --out " + (dir.path / "o").string()).status == 0);
    REQUIRE(std::filesystem::exists(dir.path / "o" / "attn.npy"));
    const RunResult again = run_attn(inputs + " --out " + (dir.path / "o").string());
    CHECK(again.status == 0);
    CHECK_FALSE(std::filesystem::exists(dir.path / "o" / "attn.npy"));
    CHECK_THAT(again.out, Contains("removed ") && Contains("attn.npy of an earlier run"));
}

TEST_CASE("attn run refuses bad input with exit 2, the file named, and no output written", "[cli][run][errors]") {
    const TempDir dir;
    const attn::Matrix good(4, 3, 0.5f);
    const std::string q = dir.file("q.npy", good), k = dir.file("k.npy", good), v = dir.file("v.npy", good);
    const std::string out = (dir.path / "out").string();
    const auto check_refused = [&](const std::string& args, const std::string& message) {
        INFO("attn " << args);
        const RunResult r = run_attn(args + " --out " + out);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Contains("attn: error: ") && Contains(message));
        CHECK((!std::filesystem::exists(out) || std::filesystem::is_empty(out)));
    };
    check_refused("run --q " + q + " --k " + k + " --v " + dir.text("bad.npy", "not numpy"),
                  "bad.npy: not a .npy file");
    check_refused("run --q " + q + " --k " + k + " --v " + dir.text("e.csv", ""), "e.csv: empty file");
    check_refused("run --q " + q + " --k " + k + " --v " + dir.text("r.csv", "1,2\n3\n"), "r.csv: line 2 has 1 values");
    check_refused("run --q " + q + " --k " + k + " --v " + dir.text("n.csv", "1,2\n3,nan\n"),
                  "n.csv: NaN at row 2, column 2");
    check_refused("run --q " + q + " --k " + k + " --v " + (dir.path / "none.npy").string(), "none.npy: cannot open");
    check_refused("run --q " + q + " --k " + dir.file("k5.npy", attn::Matrix(4, 5)) + " --v " + v,
                  "q.npy (4×3) and " + (dir.path / "k5.npy").string() + " (4×5) must have the same width E");
    check_refused("run --q " + q + " --k " + k + " --v " + dir.file("v9.npy", attn::Matrix(9, 3)),
                  "k.npy (4×3) and " + (dir.path / "v9.npy").string() + " (9×3) must have the same number of keys S");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --max-memory 20",
                  "more than the --max-memory limit of 20 bytes");
    check_refused("run --q " + q + " --k " + k, "the core needs all of --q, --k and --v");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --x " + q, "not both");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --max-memory lots", "--max-memory takes a size");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --backend quantum",
                  "--backend must be one of naive, simd, parallel and fused");
    // An empty --out is refused as an option before any work, not after the computation with a
    // message that names an empty directory.
    const RunResult empty_out = run_attn("run --q " + q + " --k " + k + " --v " + v + " --out ''");
    CHECK(empty_out.status == 2);
    CHECK_THAT(empty_out.err, Contains("attn: error: run: --out needs a directory name"));
    check_refused("run", "no input given");
}

TEST_CASE("attn run --grad-output writes the library's gradients beside output.npy, on every backend",
          "[cli][run][backward]") {
    std::mt19937 rng(47);
    const TempDir dir;
    const std::size_t n = 6, d_model = 5, d_k = 4, d_v = 3;
    const attn::Matrix X = random_matrix(n, d_model, rng), W_Q = random_matrix(d_model, d_k, rng),
                       W_K = random_matrix(d_model, d_k, rng), W_V = random_matrix(d_model, d_v, rng),
                       dO = random_matrix(n, d_v, rng);
    const std::string layer = "run --x " + dir.file("x.npy", X) + " --wq " + dir.file("wq.npy", W_Q) + " --wk " +
                              dir.file("wk.npy", W_K) + " --wv " + dir.file("wv.npy", W_V) + " --grad-output " +
                              dir.file("do.npy", dO);
    for (const attn::Backend b :
         {attn::Backend::naive, attn::Backend::simd, attn::Backend::parallel, attn::Backend::fused}) {
        INFO("backend " << attn::to_string(b));
        const attn::AttentionOptions options{.causal = true, .backend = b};
        const auto want = attn::SingleHeadAttention(W_Q, W_K, W_V).forward_backward(X, dO, options);
        const std::string out = (dir.path / attn::to_string(b)).string();
        const RunResult r = run_attn(layer + " --causal --backend " + attn::to_string(b) + " --out " + out);
        REQUIRE(r.status == 0);
        CHECK_THAT(r.out, Contains("grad_w_q.npy (5×4)") && Contains("grad_x.npy (6×5)"));
        CHECK(attn::read_matrix(out + "/output.npy") == want.result.output);
        const std::pair<const char*, const attn::Matrix*> files[] = {
            {"grad_x", &want.gradients.dX},     {"grad_w_q", &want.gradients.dW_Q}, {"grad_w_k", &want.gradients.dW_K},
            {"grad_w_v", &want.gradients.dW_V}, {"grad_q", &want.gradients.qkv.dQ}, {"grad_k", &want.gradients.qkv.dK},
            {"grad_v", &want.gradients.qkv.dV}};
        for (const auto& [name, matrix] : files) {
            INFO(name);
            CHECK(attn::read_matrix(out + "/" + name + ".npy") == *matrix);
        }
        // From Q, K and V: their gradients only, and the layer's of the earlier run are removed.
        const auto core =
            attn::attention_forward_backward(want.projections.Q, want.projections.K, want.projections.V, dO, options);
        const RunResult r2 = run_attn("run --q " + dir.file("q.npy", want.projections.Q) + " --k " +
                                      dir.file("k.npy", want.projections.K) + " --v " +
                                      dir.file("v.npy", want.projections.V) + " --grad-output " + dir.at("do.npy") +
                                      " --causal --backend " + attn::to_string(b) + " --out " + out);
        REQUIRE(r2.status == 0);
        CHECK(attn::read_matrix(out + "/grad_k.npy") == core.gradients.dK);
        CHECK_FALSE(std::filesystem::exists(out + "/grad_x.npy"));
        CHECK_THAT(r2.out, Contains("removed ") && Contains("grad_w_q.npy"));
    }
    // PyTorch's layout in, PyTorch's layout out: the weights' gradients transposed back.
    const std::string torch = "run --torch-weights --x " + dir.at("x.npy") + " --wq " +
                              dir.file("tq.npy", attn::transpose(W_Q)) + " --wk " +
                              dir.file("tk.npy", attn::transpose(W_K)) + " --wv " +
                              dir.file("tv.npy", attn::transpose(W_V)) + " --grad-output " + dir.at("do.npy");
    REQUIRE(run_attn(torch + " --out " + dir.at("t")).status == 0);
    REQUIRE(run_attn(layer + " --out " + dir.at("l")).status == 0);
    CHECK(attn::read_matrix(dir.at("t/grad_w_k.npy")) == attn::transpose(attn::read_matrix(dir.at("l/grad_w_k.npy"))));
    // Printed without --out: every gradient under its symbol.
    CHECK_THAT(run_attn(layer).out, Contains("gradient dW_V = ∂L/∂W_V (5×3)") && Contains("gradient dX = ∂L/∂X (6×5)"));
}

TEST_CASE("attn run --grad-output of the wrong shape is refused by its file's name, and nothing is written",
          "[cli][run][backward][errors]") {
    std::mt19937 rng(48);
    const TempDir dir;
    const attn::Matrix Q = random_matrix(4, 3, rng), V = random_matrix(4, 2, rng);
    const std::string q = dir.file("q.npy", Q), v = dir.file("v.npy", V);
    for (const char* backend : {"naive", "fused"}) {
        const RunResult r =
            run_attn(std::string("run --backend ") + backend + " --q " + q + " --k " + q + " --v " + v +
                     " --grad-output " + dir.file("bad.npy", random_matrix(4, 3, rng)) + " --out " + dir.at("o"));
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::StartsWith("attn: error: ") && Contains("bad.npy (4×3) must be 4×2"));
        CHECK_FALSE(std::filesystem::exists(dir.path / "o"));
    }
    // --max-memory covers the backward: refused before any work, the buffer named, nothing written
    const attn::Matrix big = random_matrix(300, 8, rng);
    const std::string b = dir.file("b.npy", big);
    const RunResult limited = run_attn("run --q " + b + " --k " + b + " --v " + b + " --grad-output " + b +
                                       " --max-memory 500K --out " + dir.at("o"));
    CHECK(limited.status == 2);
    CHECK_THAT(limited.err, Contains("dα, then dS (300×300)") && Contains("--max-memory"));
    CHECK_FALSE(std::filesystem::exists(dir.path / "o"));
    CHECK(run_attn("run --q " + b + " --k " + b + " --v " + b + " --max-memory 500K").status == 0);  // the forward fits
    const RunResult nan_run = run_attn("run --q " + q + " --k " + q + " --v " + v + " --grad-output " +
                                       dir.file("nan.npy", attn::Matrix(4, 2, std::nanf(""))));
    CHECK(nan_run.status == 2);
    CHECK_THAT(nan_run.err, Contains("nan.npy: NaN at row 1, column 1"));  // the reader refuses it first
}

TEST_CASE("attn walk --grad prints the library's gradients of the worked example, in both languages",
          "[cli][walk][backward]") {
    for (const bool causal : {false, true}) {
        const attn::AttentionOptions options{.causal = causal};
        const attn::BackwardTrace g = attn::worked_example::backward_trace(options);
        attn::PrintOptions p;
        p.precision = 4;
        for (const char* lang : {"en", "zh"}) {
            INFO(lang << (causal ? " causal" : ""));
            const RunResult r = run_attn(std::string("walk --grad --lang ") + lang + (causal ? " --causal" : ""));
            REQUIRE(r.status == 0);
            CHECK_THAT(r.out, Contains("[grad 2.Q] dW_Q = Xᵀ·dQ (4×3)") && Contains(attn::format_matrix(g.dW_Q, p)));
            CHECK_THAT(r.out, Contains("[grad 5] dS' = α ⊙ (dα − rowsum(dα ⊙ α)) (3×3)"));
            CHECK_THAT(r.out, Contains(std::string(lang) == "zh" ? "做一步梯度下降" : "One step of gradient descent"));
            if (causal) CHECK_THAT(r.out, Contains("[grad 4.mask]"));
        }
        const std::string json = run_attn(std::string("walk --grad --format json") + (causal ? " --causal" : "")).out;
        // each float as the shortest decimal that reads back to it, as the JSON writes every float
        const std::string first = attn::shortest_decimal(g.dW_V(0, 0));
        CHECK_THAT(json, Contains("\"backward\": {") && Contains("\"dW_V\": [\n    [" + first + ", "));
    }
    CHECK_THAT(run_attn("walk --format json").out, !Contains("\"backward\""));
}

TEST_CASE("attn learn trains both tasks in both languages and marks every wanted cell as reached", "[cli][learn]") {
    for (const char* task : {"sentence", "retrieval"})
        for (const char* lang : {"en", "zh"}) {
            INFO(task << " " << lang);
            const RunResult r = run_attn(std::string("learn --task ") + task + " --lang " + lang);
            REQUIRE(r.status == 0);
            const std::string end = r.out.substr(r.out.find(std::string(lang) == "zh" ? "结束时的 α" : "α at the end"));
            const std::size_t rows = std::string(task) == "sentence" ? 3 : 8;
            std::size_t ticks = 0;
            for (std::size_t at = end.find("✓"); at != std::string::npos; at = end.find("✓", at + 1)) ++ticks;
            CHECK(ticks == rows);
            CHECK(end.find("✗") == std::string::npos);
        }
    const RunResult json = run_attn("learn --task sentence --steps 20 --format json");
    CHECK(json.status == 0);
    CHECK_THAT(json.out, Contains("\"wanted\": [1, 0, 1]") && Contains("\"alpha_end\": [\n    ["));
    for (const char* bad : {"--steps 0", "--lr 2", "--task other", "--backend fused", "--steps 5 --steps 6"}) {
        INFO(bad);
        const RunResult r = run_attn(std::string("learn ") + bad);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::StartsWith("attn: error: learn: "));
    }
}

TEST_CASE("attn run --dtype bf16 writes the library's bf16 output and refuses what bf16 cannot do",
          "[cli][run][bf16]") {
    std::mt19937 rng(47);
    const TempDir dir;
    const attn::Matrix Q = random_matrix(40, 7, rng), K = random_matrix(40, 7, rng), V = random_matrix(40, 5, rng);
    const std::string core = "run --q " + dir.file("q.npy", Q) + " --k " + dir.file("k.npy", K) + " --v " +
                             dir.file("v.npy", V) + " --causal";
    const RunResult r = run_attn(core + " --backend fused --dtype bf16 --out " + (dir.path / "out").string());
    REQUIRE(r.status == 0);
    const attn::AttentionOptions bf16{.causal = true, .backend = attn::Backend::fused, .dtype = attn::Dtype::bf16};
    const attn::Matrix want = attn::scaled_dot_product_attention(Q, K, V, bf16).output;
    CHECK(attn::read_matrix((dir.path / "out" / "output.npy").string()) == want);
    CHECK(want !=
          attn::scaled_dot_product_attention(Q, K, V, {.causal = true, .backend = attn::Backend::fused}).output);
    const RunResult parallel = run_attn(core + " --dtype bf16");
    CHECK(parallel.status == 2);
    CHECK_THAT(parallel.err, Contains("attn: error:") && Contains("dtype bf16 runs on the fused backend only"));
    const RunResult backward =
        run_attn(core + " --backend fused --dtype bf16 --grad-output " + dir.file("do.npy", random_matrix(40, 5, rng)));
    CHECK(backward.status == 2);
    CHECK_THAT(backward.err, Contains("dtype bf16 has no backward"));
    const RunResult unknown = run_attn(core + " --dtype f16");
    CHECK(unknown.status == 2);
    CHECK_THAT(unknown.err, Contains("--dtype must be one of f32 and bf16, got 'f16'"));
    // a query float32 takes (the keys are small) but bfloat16 cannot hold: refused, not NaN
    const std::string huge = dir.file("huge.npy", attn::Matrix{{3.4e38f, 0.0f}}),
                      small = dir.file("small.npy", attn::Matrix{{1e-3f, 0.0f}, {0.0f, 1e-3f}}),
                      two = dir.file("two.npy", attn::Matrix{{1.0f, 2.0f}, {3.0f, 4.0f}});
    const std::string past = "run --q " + huge + " --k " + small + " --v " + two + " --backend fused";
    CHECK(run_attn(past).status == 0);
    const RunResult rounded = run_attn(past + " --dtype bf16");
    CHECK(rounded.status == 2);
    CHECK(rounded.out.empty());
    CHECK_THAT(rounded.err, Contains("dtype bf16: " + huge +
                                     " (1×2) holds 3.4e+38 at row 0, column 0, which rounds to "
                                     "±∞ in bfloat16 (the largest is 3.38953e+38)"));
}

TEST_CASE("attn walk --dtype bf16 shows the worked example's O in bfloat16 and counts what changed",
          "[cli][walk][bf16]") {
    const attn::AttentionTrace walk = attn::worked_example::trace({});
    const attn::Matrix O = attn::scaled_dot_product_attention(
                               walk.Q, walk.K, walk.V, {.backend = attn::Backend::fused, .dtype = attn::Dtype::bf16})
                               .output;
    std::size_t changed = 0;
    for (std::size_t i = 0; i < O.rows(); ++i)
        for (std::size_t j = 0; j < O.cols(); ++j)
            changed += attn::format_number(O(i, j), 4) != attn::format_number(walk.output(i, j), 4);
    REQUIRE(changed > 0);  // at four decimals, bfloat16 shows
    attn::PrintOptions p;
    p.row_labels = {"猫 cat", "坐 sat", "地毯 mat"};
    for (const char* lang : {"en", "zh"}) {
        INFO(lang);
        const RunResult r = run_attn(std::string("walk --dtype bf16 --color never --lang ") + lang);
        REQUIRE(r.status == 0);
        if (std::string(lang) == "en") CHECK_THAT(r.out, Contains("O (bf16)\n" + attn::format_matrix(O, p)));
        else CHECK_THAT(r.out, Contains("同样的注意力，改用 bfloat16 计算") && Contains("O (bf16)\n"));
        CHECK_THAT(r.out, Contains((std::string(lang) == "zh" ? "O 的 9 个数中有 " : "Of O's 9 numbers, ") +
                                   std::to_string(changed) + (std::string(lang) == "zh" ? " 个与" : " differ")));
    }
    CHECK_THAT(run_attn("walk --color never").out, !Contains("bfloat16"));
    const RunResult json = run_attn("walk --dtype bf16 --format json");
    CHECK(json.status == 2);
    CHECK_THAT(json.err, Contains("attn: error: walk: --dtype bf16 is shown as text only"));
}

// ---- attn run on heads: 3-D (H, L, E) and 4-D (B, H, L, E) files, masks, causal L ≠ S ------------

namespace {

// Writes `m` (its rows the C order of `shape`) as a .npy file of that shape; returns its path.
std::string nd_file(const TempDir& dir, const std::string& name, const attn::Matrix& m, const attn::Shape& shape) {
    attn::write_npy_files({{dir.at(name), &m, shape}});
    return dir.at(name);
}

// A boolean .npy file ('|b1', one byte each, C order), as NumPy writes one; returns its path.
std::string bool_file(const TempDir& dir, const std::string& name, const attn::Shape& shape,
                      const std::vector<bool>& values) {
    std::string bytes = attn::npy_header(shape);
    bytes.replace(bytes.find("'<f4'"), 5, "'|b1'");
    for (const bool v : values) bytes += v ? '\1' : '\0';
    return dir.text(name, bytes);
}

// Head i of a stack of heads of `rows` rows each (the rows of an N-D array's matrix), as a matrix.
attn::Matrix head(const attn::Matrix& stack, std::size_t i, std::size_t rows) {
    return attn::Matrix::borrow(stack.data() + i * rows * stack.cols(), rows, stack.cols());
}

attn::Array read_out(const std::string& dir, const std::string& name) { return attn::read_array(dir + "/" + name); }

// softmax(Q·Kᵀ/√E + bias)·V in double, bias(i, j) −∞ where key j is masked; a row that no key may
// attend gives 0 — the semantics attn run documents, computed without the library.
reference::Mat masked_reference(const attn::Matrix& Q, const attn::Matrix& K, const attn::Matrix& V,
                                const std::function<double(std::size_t, std::size_t)>& bias) {
    reference::Mat out(Q.rows(), std::vector<double>(V.cols(), 0.0));
    for (std::size_t i = 0; i < Q.rows(); ++i) {
        std::vector<double> s(K.rows());
        double top = -INFINITY, total = 0.0;
        for (std::size_t j = 0; j < K.rows(); ++j) {
            double dot = 0.0;
            for (std::size_t p = 0; p < Q.cols(); ++p) dot += double(Q(i, p)) * K(j, p);
            top = std::max(top, s[j] = dot / std::sqrt(double(Q.cols())) + bias(i, j));
        }
        if (top == -INFINITY) continue;  // fully masked: 0
        for (double& x : s) total += (x = std::exp(x - top));
        for (std::size_t j = 0; j < K.rows(); ++j)
            for (std::size_t c = 0; c < V.cols(); ++c) out[i][c] += s[j] / total * V(j, c);
    }
    return out;
}

}  // namespace

TEST_CASE("attn run on 4-D and 3-D files writes, head by head, the bits of 2-D runs; GQA and causal L ≠ S",
          "[cli][run][heads]") {
    std::mt19937 rng(54);
    const TempDir dir;
    const std::size_t B = 2, H = 4, H_kv = 2, L = 5, S = 7, E = 4, E_v = 3, G = H / H_kv;
    const attn::Matrix Q = random_matrix(B * H * L, E, rng), K = random_matrix(B * H_kv * S, E, rng),
                       V = random_matrix(B * H_kv * S, E_v, rng), dO = random_matrix(B * H * L, E_v, rng);
    const std::string four = "run --causal --q " + nd_file(dir, "q.npy", Q, {B, H, L, E}) + " --k " +
                             nd_file(dir, "k.npy", K, {B, H_kv, S, E}) + " --v " +
                             nd_file(dir, "v.npy", V, {B, H_kv, S, E_v}) + " --grad-output " +
                             nd_file(dir, "do.npy", dO, {B, H, L, E_v});
    // batch 0 alone, as 3-D files
    const std::string three = "run --causal --q " + nd_file(dir, "q3.npy", head(Q, 0, H * L), {H, L, E}) + " --k " +
                              nd_file(dir, "k3.npy", head(K, 0, H_kv * S), {H_kv, S, E}) + " --v " +
                              nd_file(dir, "v3.npy", head(V, 0, H_kv * S), {H_kv, S, E_v}) + " --grad-output " +
                              nd_file(dir, "do3.npy", head(dO, 0, H * L), {H, L, E_v});
    for (const std::string backend : {"naive", "simd", "parallel", "fused"}) {
        INFO("backend " << backend);
        const std::string out = dir.at(backend);
        const RunResult r = run_attn(four + " --backend " + backend + " --out " + out);
        REQUIRE(r.status == 0);
        CHECK_THAT(r.out, Contains("output.npy (2×4×5×3)") && Contains("grad_k.npy (2×2×7×4)"));
        const attn::Array O = read_out(out, "output.npy"), dQ = read_out(out, "grad_q.npy"),
                          dK = read_out(out, "grad_k.npy"), dV = read_out(out, "grad_v.npy");
        CHECK(O.shape == attn::Shape{B, H, L, E_v});
        CHECK(dV.shape == attn::Shape{B, H_kv, S, E_v});
        const bool has_alpha = backend != "fused";
        CHECK(std::filesystem::exists(out + "/attn.npy") == has_alpha);
        std::vector<attn::Matrix> dK_sum(B * H_kv, attn::Matrix(S, E)), dV_sum(B * H_kv, attn::Matrix(S, E_v));
        for (std::size_t i = 0; i < B * H; ++i) {  // query head i = (b, h) reads key/value head b·H_kv + h / G
            INFO("head " << i);
            const std::size_t kv = i / H * H_kv + i % H / G;
            const std::string one = dir.at(backend + std::to_string(i));
            const RunResult single =
                run_attn("run --causal --backend " + backend + " --q " + dir.file("q_.npy", head(Q, i, L)) + " --k " +
                         dir.file("k_.npy", head(K, kv, S)) + " --v " + dir.file("v_.npy", head(V, kv, S)) +
                         " --grad-output " + dir.file("do_.npy", head(dO, i, L)) + " --out " + one);
            REQUIRE(single.status == 0);
            CHECK(head(O.values, i, L) == attn::read_matrix(one + "/output.npy"));
            if (has_alpha) CHECK(head(read_out(out, "attn.npy").values, i, L) == attn::read_matrix(one + "/attn.npy"));
            CHECK(head(dQ.values, i, L) == attn::read_matrix(one + "/grad_q.npy"));
            attn::add_in_place(dK_sum[kv], attn::read_matrix(one + "/grad_k.npy"));
            attn::add_in_place(dV_sum[kv], attn::read_matrix(one + "/grad_v.npy"));
        }
        for (std::size_t kv = 0; kv < B * H_kv; ++kv) {  // a shared head's gradient: its group's sum
            check_close(head(dK.values, kv, S), dK_sum[kv], 1e-6, 1e-6);
            check_close(head(dV.values, kv, S), dV_sum[kv], 1e-6, 1e-6);
        }
        const RunResult r3 = run_attn(three + " --backend " + backend + " --out " + out + "3");
        REQUIRE(r3.status == 0);
        const attn::Array O3 = read_out(out + "3", "output.npy");
        CHECK(O3.shape == attn::Shape{H, L, E_v});
        CHECK(O3.values == head(O.values, 0, H * L));
        CHECK(read_out(out + "3", "grad_k.npy").shape == attn::Shape{H_kv, S, E});
    }
}

TEST_CASE("attn run prints the shapes it understood, then each head under its own heading", "[cli][run][heads]") {
    std::mt19937 rng(55);
    const TempDir dir;
    const attn::Matrix Q = random_matrix(2 * 4 * 3, 5, rng), K = random_matrix(2 * 2 * 6, 5, rng),
                       V = random_matrix(2 * 2 * 6, 2, rng);
    const std::string args = "run --q " + nd_file(dir, "q.npy", Q, {2, 4, 3, 5}) + " --k " +
                             nd_file(dir, "k.npy", K, {2, 2, 6, 5}) + " --v " + nd_file(dir, "v.npy", V, {2, 2, 6, 2}) +
                             " --mask " + bool_file(dir, "m.npy", {1, 6}, {true, true, true, true, false, false});
    const RunResult r = run_attn(args);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, StartsWith("Q " + dir.at("q.npy") + ": 2 batches × 4 heads × 3 tokens × 5\n" + "K " +
                                 dir.at("k.npy") + ": 2 batches × 2 heads × 6 tokens × 5\n" + "V " + dir.at("v.npy") +
                                 ": 2 batches × 2 heads × 6 tokens × 2\n" + "mask " + dir.at("m.npy") +
                                 ": boolean 1×6, broadcast to the scores 2×4×3×6 (B, H, L, S)\n" +
                                 "4 query heads share 2 key/value heads\n"));
    REQUIRE(run_attn(args + " --out " + dir.at("o")).status == 0);
    const attn::Array O = read_out(dir.at("o"), "output.npy"), alpha = read_out(dir.at("o"), "attn.npy");
    check_matches(matrix_after(r.out, "output O, batch 1, head 2 (3×2)"), head(O.values, 6, 3), 5e-5);
    check_matches(matrix_after(r.out, "attention weights α, batch 0, head 3 (3×6)"), head(alpha.values, 3, 3), 5e-5);
    CHECK(matrix_after(r.out, "attention weights α, batch 0, head 3")[1][5] == 0.0f);  // masked key
    const RunResult three = run_attn("run --q " + nd_file(dir, "q3.npy", head(Q, 0, 12), {4, 3, 5}) + " --k " +
                                     nd_file(dir, "k3.npy", head(K, 0, 6), {1, 6, 5}) + " --v " +
                                     nd_file(dir, "v3.npy", head(V, 0, 6), {1, 6, 2}) + " --backend fused");
    REQUIRE(three.status == 0);
    CHECK_THAT(three.out, Contains(": 4 heads × 3 tokens × 5\n") && Contains("4 query heads share 1 key/value head\n"));
    CHECK_THAT(three.out, Contains("output O, head 3 (3×2)") && !Contains("batch"));
    CHECK_THAT(three.out, Contains("not formed by the fused backend"));
    const RunResult grads =
        run_attn("run --q " + dir.at("q3.npy") + " --k " + dir.at("k3.npy") + " --v " + dir.at("v3.npy") +
                 " --grad-output " + nd_file(dir, "do3.npy", random_matrix(12, 2, rng), {4, 3, 2}));
    REQUIRE(grads.status == 0);
    CHECK_THAT(grads.out, Contains("dO " + dir.at("do3.npy") + ": 4 heads × 3 tokens × 2\n") &&
                              Contains("gradient dQ = ∂L/∂Q, head 3 (3×5)") &&
                              Contains("gradient dK = ∂L/∂K, head 0 (6×5)") && !Contains("∂L/∂K, head 1"));
    const RunResult two = run_attn("run --q " + dir.file("q2.npy", head(Q, 0, 3)) + " --k " +
                                   dir.file("k2.npy", head(K, 0, 6)) + " --v " + dir.file("v2.npy", head(V, 0, 6)));
    CHECK_THAT(two.out, StartsWith("Q " + dir.at("q2.npy") + ": 3 tokens × 5\n"));
    CHECK_THAT(two.out, Contains("output O (3×2)") && !Contains("share"));
    const RunResult help = run_attn("run --help");
    CHECK_THAT(help.out, Contains("4-D (B, H, L, E)") && Contains("--mask M ") && Contains("aligned top-left"));
}

TEST_CASE("attn run --mask: boolean and additive masks broadcast as NumPy does, head by head as 2-D runs",
          "[cli][run][heads][mask]") {
    std::mt19937 rng(56);
    const TempDir dir;
    const std::size_t B = 2, H = 2, L = 4, S = 6, E = 3;
    const attn::Matrix Q = random_matrix(B * H * L, E, rng), K = random_matrix(B * H * S, E, rng),
                       V = random_matrix(B * H * S, E, rng);
    std::vector<bool> allowed(L * S);
    for (std::size_t k = 0; k < allowed.size(); ++k) allowed[k] = k / S != 2 && (k % 3 != 1);  // query 2: no key
    const std::string bool_mask = bool_file(dir, "b.npy", {L, S}, allowed);
    attn::Matrix bias = random_matrix(B, S, rng);  // (B, 1, 1, S): a padding mask with biases
    bias(1, S - 1) = attn::neg_inf;
    bias(1, S - 2) = attn::neg_inf;
    const std::string float_mask = nd_file(dir, "f.npy", bias, {B, 1, 1, S});
    const std::string core = "run --q " + nd_file(dir, "q.npy", Q, {B, H, L, E}) + " --k " +
                             nd_file(dir, "k.npy", K, {B, H, S, E}) + " --v " + nd_file(dir, "v.npy", V, {B, H, S, E});
    for (const std::string backend : {"naive", "parallel", "fused"}) {
        INFO("backend " << backend);
        REQUIRE(run_attn(core + " --backend " + backend + " --mask " + bool_mask + " --out " + dir.at("b")).status ==
                0);
        REQUIRE(run_attn(core + " --backend " + backend + " --mask " + float_mask + " --out " + dir.at("f")).status ==
                0);
        const attn::Matrix Ob = read_out(dir.at("b"), "output.npy").values,
                           Of = read_out(dir.at("f"), "output.npy").values;
        for (std::size_t i = 0; i < B * H; ++i) {
            INFO("head " << i);
            const std::string one = " --backend " + backend + " --q " + dir.file("q_.npy", head(Q, i, L)) + " --k " +
                                    dir.file("k_.npy", head(K, i, S)) + " --v " + dir.file("v_.npy", head(V, i, S));
            REQUIRE(run_attn("run" + one + " --mask " + bool_mask + " --out " + dir.at("b1")).status == 0);
            CHECK(head(Ob, i, L) == attn::read_matrix(dir.at("b1/output.npy")));
            const attn::Matrix row = head(bias, i / H, 1);  // (1, S), broadcast over the queries
            REQUIRE(run_attn("run" + one + " --mask " + dir.file("r.npy", row) + " --out " + dir.at("f1")).status == 0);
            CHECK(head(Of, i, L) == attn::read_matrix(dir.at("f1/output.npy")));
            check_close(head(Ob, i, L), masked_reference(head(Q, i, L), head(K, i, S), head(V, i, S),
                                                         [&](std::size_t q, std::size_t k) {
                                                             return allowed[q * S + k] ? 0.0 : -INFINITY;
                                                         }));
            check_close(head(Of, i, L),
                        masked_reference(head(Q, i, L), head(K, i, S), head(V, i, S),
                                         [&](std::size_t, std::size_t k) { return double(row(0, k)); }));
            for (std::size_t c = 0; c < E; ++c) CHECK(head(Ob, i, L)(2, c) == 0.0f);  // no key may attend: 0
        }
    }
}

TEST_CASE("attn run --causal with L ≠ S: query i sees keys j ≤ i, aligned top-left", "[cli][run][heads][mask]") {
    std::mt19937 rng(57);
    const TempDir dir;
    for (const auto& [L, S] : {std::pair<std::size_t, std::size_t>{3, 5}, {5, 3}}) {
        INFO(L << " queries, " << S << " keys");
        const attn::Matrix Q = random_matrix(L, 4, rng), K = random_matrix(S, 4, rng), V = random_matrix(S, 2, rng);
        const std::string files =
            " --q " + dir.file("q.npy", Q) + " --k " + dir.file("k.npy", K) + " --v " + dir.file("v.npy", V);
        for (const std::string backend : {"naive", "simd", "parallel", "fused"}) {
            INFO("backend " << backend);
            REQUIRE(run_attn("run --causal --backend " + backend + files + " --out " + dir.at("o")).status == 0);
            check_close(
                attn::read_matrix(dir.at("o/output.npy")),
                masked_reference(Q, K, V, [](std::size_t i, std::size_t j) { return j <= i ? 0.0 : -INFINITY; }));
        }
        REQUIRE(run_attn("run --causal --backend naive" + files + " --out " + dir.at("o")).status == 0);
        const attn::Matrix alpha = attn::read_matrix(dir.at("o/attn.npy"));
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < S; ++j) CHECK((alpha(i, j) == 0.0f) == (j > i));
    }
}

TEST_CASE("attn run refuses heads that do not fit together, with exit 2, the files and shapes, nothing written",
          "[cli][run][heads][errors]") {
    std::mt19937 rng(58);
    const TempDir dir;
    const auto file = [&](const std::string& name, const attn::Shape& shape) {
        std::size_t rows = 1;
        for (std::size_t k = 0; k + 1 < shape.size(); ++k) rows *= shape[k];
        return nd_file(dir, name, random_matrix(rows, shape.back(), rng), shape);
    };
    const std::string q = file("q.npy", {2, 3, 4}), k = file("k.npy", {2, 5, 4}), v = file("v.npy", {2, 5, 3});
    const std::string q2 = file("q2.npy", {4, 4}), k2 = file("k2.npy", {5, 4}), v2 = file("v2.npy", {5, 3});
    const std::string out = dir.at("out");
    const auto check_refused = [&](const std::string& args, const std::string& message) {
        INFO("attn " << args);
        const RunResult r = run_attn(args + " --out " + out);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err == "attn: error: " + message + "\n");
        CHECK_FALSE(std::filesystem::exists(out));
    };
    // the library's refusals, told after the files, each operand named by its file and shape
    const auto sdpa = [](const std::vector<std::string>& files, const std::string& what) {
        std::string list;
        for (const std::string& f : files) list += (list.empty() ? "" : ", ") + f;
        return list + ": scaled_dot_product_attention: " + what;
    };
    check_refused("run --q " + q + " --k " + k2 + " --v " + v,
                  sdpa({q, k2, v},
                       q + " (2×3×4), " + k2 + " (5×4) and " + v + " (2×5×3) must have the same number of dimensions"));
    const std::string d_o = file("do.npy", {6, 3});
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --grad-output " + d_o,
                  q + ", " + k + ", " + v + ", " + d_o + ": scaled_dot_product_attention_backward: " + d_o +
                      " (6×3) must be 2×3×3, the shape of O: one gradient per output entry");
    const std::string one = file("q1.npy", {4});
    check_refused("run --q " + one + " --k " + one + " --v " + one,
                  sdpa({one, one, one}, one + " (4) must have at least 2 dimensions (…, L, E)"));
    const std::string bits = bool_file(dir, "bits.npy", {2, 4}, std::vector<bool>(8, true));
    check_refused(
        "run --q " + bits + " --k " + k2 + " --v " + v2,
        sdpa({bits, k2, v2}, bits + " (2×4) holds booleans: it must hold numbers (only a mask may be boolean)"));
    const std::string m = bool_file(dir, "m.npy", {3, 4}, std::vector<bool>(12, true));
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --mask " + m,
                  sdpa({q, k, v, m}, m + " (3×4) does not broadcast to the scores 2×3×5 (H, L, S): aligned "
                                         "from the right, each of its dimensions must be 1 or the scores' own"));
    const std::string m4 = file("m4.npy", {1, 1, 4, 5});
    check_refused("run --q " + q2 + " --k " + k2 + " --v " + v2 + " --mask " + m4,
                  sdpa({q2, k2, v2, m4}, m4 + " (1×1×4×5) does not broadcast to the scores 4×5 (L, S): aligned "
                                              "from the right, each of its dimensions must be 1 or the scores' own"));
    check_refused("run --x " + q + " --wq " + q2 + " --wk " + q2 + " --wv " + q2,
                  q + ", " + q2 + ", " + q2 + ", " + q2 + ": SingleHeadAttention: " + q +
                      " (2×3×4): 3-D; the layer reads 2-D matrices");
    // what the library reads, attn run reads: more leading dimensions are the batch, and the layer
    // takes a mask over its scores
    const std::string five = file("q5.npy", {1, 2, 1, 3, 4});
    const RunResult batches =
        run_attn("run --q " + five + " --k " + five + " --v " + five + " --out " + dir.at("five"));
    CHECK(batches.status == 0);
    CHECK_THAT(batches.out, Contains("2 batches (1×2) × 1 head × 3 tokens × 4") && Contains("output.npy (1×2×1×3×4)"));
    const std::string layer = "run --x " + q2 + " --wq " + q2 + " --wk " + q2 + " --wv " + q2;
    const std::vector<bool> lower = {true, false, false, false, true, true, false, false,
                                     true, true,  true,  false, true, true, true,  true};
    REQUIRE(
        run_attn(layer + " --mask " + bool_file(dir, "lower.npy", {4, 4}, lower) + " --out " + dir.at("m")).status ==
        0);
    REQUIRE(run_attn(layer + " --causal --out " + dir.at("c")).status == 0);
    CHECK(attn::read_array(dir.at("m") + "/output.npy").values == attn::read_array(dir.at("c") + "/output.npy").values);
    // what the library checks: told after the files, each operand named by its file and shape
    const std::string k3 = file("k3.npy", {3, 5, 4}), v3 = file("v3.npy", {3, 5, 3});
    const RunResult groups =
        run_attn("run --q " + file("q4.npy", {4, 3, 4}) + " --k " + k3 + " --v " + v3 + " --out " + out);
    CHECK(groups.status == 2);
    CHECK_THAT(groups.err, StartsWith("attn: error: " + dir.at("q4.npy") + ", " + k3 + ", " + v3 + ": ") &&
                               Contains("multiple") && Contains(k3 + " (3×5×4)"));
    CHECK_FALSE(std::filesystem::exists(out));
    const RunResult widths =
        run_attn("run --q " + q + " --k " + k + " --v " + file("v6.npy", {2, 6, 3}) + " --out " + out);
    CHECK(widths.status == 2);
    CHECK_THAT(widths.err, Contains(dir.at("v6.npy") + " (2×6×3)"));
    CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("attn run --kv-dtype rounds K and V into the cache the library reads: its bits, on any backend",
          "[cli][run][decode]") {
    std::mt19937 rng(59);
    const TempDir dir;
    const std::size_t B = 1, H = 8, H_kv = 2, L = 1, S = 300, E = 16, E_v = 8;  // decoding: one query row, GQA
    const attn::Matrix Q = random_matrix(B * H * L, E, rng), K = random_matrix(B * H_kv * S, E, rng),
                       V = random_matrix(B * H_kv * S, E_v, rng);
    const std::string files = "run --q " + nd_file(dir, "q.npy", Q, {B, H, L, E}) + " --k " +
                              nd_file(dir, "k.npy", K, {B, H_kv, S, E}) + " --v " +
                              nd_file(dir, "v.npy", V, {B, H_kv, S, E_v});
    const attn::HeadsView q{Q.data(), {B, H, L, E}}, k{K.data(), {B, H_kv, S, E}}, v{V.data(), {B, H_kv, S, E_v}};
    for (const std::string kv_dtype : {"f32", "bf16", "f16"}) {
        const attn::KvDtype type = attn::kv_dtype_from_string(kv_dtype);
        const attn::Cache k_cache = attn::to_cache(k, type), v_cache = attn::to_cache(v, type);
        for (const attn::Backend backend : {attn::Backend::fused, attn::Backend::naive}) {
            INFO(kv_dtype << " on the " << attn::to_string(backend) << " backend");
            const std::string out = dir.at(kv_dtype + attn::to_string(backend));
            const RunResult r = run_attn(files + " --kv-dtype " + kv_dtype + " --backend " + attn::to_string(backend) +
                                         " --out " + out);
            REQUIRE(r.status == 0);
            CHECK_THAT(r.out, Contains("8 query heads share 2 key/value heads\nK and V cached as " + kv_dtype + ", " +
                                       (kv_dtype == "f32" ? "4" : "2") + " bytes a value (Q and O float32)\n"));
            const attn::HeadsResult want =
                attn::scaled_dot_product_attention(q, k_cache.view(), v_cache.view(), {.backend = backend});
            const attn::Array O = read_out(out, "output.npy");
            CHECK(O.shape == attn::Shape{B, H, L, E_v});
            CHECK(O.values == want.output.values);
            if (kv_dtype != "f32")  // and the rounding shows
                CHECK(O.values != attn::scaled_dot_product_attention(q, k, v, {.backend = backend}).output.values);
        }
    }
    // 2-D files are one head
    const attn::Matrix q2 = head(Q, 0, 1), k2 = head(K, 0, S), v2 = head(V, 0, S);
    const RunResult one = run_attn("run --q " + dir.file("q2.npy", q2) + " --k " + dir.file("k2.npy", k2) + " --v " +
                                   dir.file("v2.npy", v2) + " --kv-dtype bf16 --out " + dir.at("one"));
    REQUIRE(one.status == 0);
    const attn::Cache k_one = attn::to_cache({k2.data(), {1, 1, S, E}}, attn::KvDtype::bf16),
                      v_one = attn::to_cache({v2.data(), {1, 1, S, E_v}}, attn::KvDtype::bf16);
    const attn::Array O2 = read_out(dir.at("one"), "output.npy");
    CHECK(O2.shape == attn::Shape{1, E_v});
    CHECK(O2.values == attn::scaled_dot_product_attention({q2.data(), {1, 1, 1, E}}, k_one.view(), v_one.view(),
                                                          {.backend = attn::Backend::parallel})
                           .output.values);
    CHECK_THAT(run_attn("run --help").out, Contains("--kv-dtype f32|bf16|f16"));
}

TEST_CASE("attn run --kv-dtype refuses what a cache cannot do, with exit 2 and nothing written",
          "[cli][run][decode][errors]") {
    std::mt19937 rng(60);
    const TempDir dir;
    const std::string q = nd_file(dir, "q.npy", random_matrix(4, 8, rng), {4, 1, 8}),
                      k = nd_file(dir, "k.npy", random_matrix(2 * 300, 8, rng), {2, 300, 8}),
                      m = dir.file("m.npy", random_matrix(8, 8, rng));
    const std::string core = "run --q " + q + " --k " + k + " --v " + k, out = dir.at("out");
    const auto check_refused = [&](const std::string& args, const std::string& message) {
        INFO("attn " << args);
        const RunResult r = run_attn(args + " --out " + out);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err == "attn: error: " + message + "\n");
        CHECK_FALSE(std::filesystem::exists(out));
    };
    check_refused(core + " --kv-dtype f8", "run: --kv-dtype must be one of f32, bf16 and f16, got 'f8'");
    check_refused(core + " --kv-dtype bf16 --grad-output " + q,
                  q + ", " + k + ", " + k + ", " + q +
                      ": scaled_dot_product_attention_backward: a bf16 cache has no backward: the backward and "
                      "keep_for_backward need float32 keys and values");
    check_refused("run --x " + m + " --wq " + m + " --wk " + m + " --wv " + m + " --kv-dtype f16",
                  m + ", " + m + ", " + m + ", " + m +
                      ": SingleHeadAttention: a kv dtype applies to keys and values given as they are, not to the "
                      "layer's projections");
    // the cache is charged to the budget after the files (4·8·4 + 2·2·300·8·4 bytes): 2·300·8·2 for K
    check_refused(
        core + " --kv-dtype f16 --max-memory 40K",
        q + ", " + k + ", " + k + ": " + k + " (2×300×8) as float32 holding f16 values (given as " +
            "float32) needs 18.75 KiB on top of 37.62 KiB already taken, more than the --max-memory limit of " +
            "40 KiB");
    attn::Matrix large = random_matrix(2 * 300, 8, rng);
    large(301, 2) = 65520.0f;  // the midpoint between the largest float16 and 2¹⁶: a tie, to ∞
    const std::string v = nd_file(dir, "v.npy", large, {2, 300, 8});
    check_refused(core.substr(0, core.rfind(" --v ")) + " --v " + v + " --kv-dtype f16",
                  q + ", " + k + ", " + v + ": scaled_dot_product_attention: " + v +
                      " (2×300×8) holds 65520 at [1, 1, 2], which rounds to ±∞ in f16 (the largest is 65504): " +
                      "a cache cannot hold it");
}
