// `attn` as a learner runs it: the walkthrough's numbers, languages, colour, and exit codes.
#include <catch2/catch.hpp>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "attention/worked_example.hpp"
#include "io/io.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"
#include "matrix/random.hpp"
#include "run_attn.hpp"
#include "simd/simd.hpp"
#include "temp_dir.hpp"
#include "walk_output.hpp"

using attn::random_matrix;

using Catch::Contains;

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
    CHECK_THAT(r.out, Contains("第 3 步") && Contains("因果掩码") && Contains("S ÷ d_k = S ÷ 3"));
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
        if (open == std::string::npos || line.find(']') == std::string::npos) {
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
    check_error("walk --scale cube", "--scale must be sqrt, dk or none, got 'cube'");
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
    CHECK_THAT(fused.err, Contains("without ever storing S or α"));
    const RunResult bad = run_attn("walk --backend gpu");
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Contains("--backend must be naive, simd, parallel or fused, got 'gpu'"));
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
                  "q.npy (4×3) and " + (dir.path / "k5.npy").string() + " (4×5) must have the same width d_k");
    check_refused("run --q " + q + " --k " + k + " --v " + dir.file("v9.npy", attn::Matrix(9, 3)),
                  "k.npy (4×3) and " + (dir.path / "v9.npy").string() + " (9×3) must have the same number of rows");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --max-memory 20",
                  "more than the --max-memory limit of 20 bytes");
    check_refused("run --q " + q + " --k " + k, "the core needs all of --q, --k and --v");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --x " + q, "not both");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --max-memory lots", "--max-memory takes a size");
    check_refused("run --q " + q + " --k " + k + " --v " + v + " --backend quantum",
                  "--backend must be naive, simd, parallel or fused");
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
        char first[32];  // full float precision, as the JSON writes every number
        std::snprintf(first, sizeof first, "%.9g", double(g.dW_V(0, 0)));
        CHECK_THAT(json, Contains("\"backward\": {") && Contains("\"dW_V\": [\n    [" + std::string(first) + ", "));
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
    CHECK_THAT(unknown.err, Contains("--dtype must be f32 or bf16, got 'f16'"));
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
        else CHECK_THAT(r.out, Contains("同一个注意力，用 bfloat16 计算") && Contains("O (bf16)\n"));
        CHECK_THAT(r.out,
                   Contains(std::to_string(changed) + (std::string(lang) == "zh" ? " 个（共 9 个）" : " of O's 9")));
    }
    CHECK_THAT(run_attn("walk --color never").out, !Contains("bfloat16"));
    const RunResult json = run_attn("walk --dtype bf16 --format json");
    CHECK(json.status == 2);
    CHECK_THAT(json.err, Contains("attn: error: walk: --dtype bf16 is shown as text only"));
}
