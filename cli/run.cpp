// cli/run.cpp — `attn run`. Reads the matrices, checks that their shapes chain (naming the files),
// runs the library, then prints the results or writes them as .npy files.
#include "cli/run.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>

#include "attention/attention.hpp"
#include "cli/args.hpp"
#include "io/io.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

const char* const help = R"(Usage: attn run --x X --wq WQ --wk WK --wv WV [options]     the full layer
       attn run --q Q --k K --v V [options]                     the core softmax(Q·Kᵀ/√d_k)·V

Reads .npy (NumPy 1.0/2.0, float32 or float64, 2-D, C order) or .csv (one row per line, values
separated by commas) files, chosen by extension. Weights follow the lesson: Q = X·W_Q with W_Q of
shape (d_model × d_k).

Options:
  --causal                  causal mask: position i sees only j ≤ i
  --scale sqrt|dk|none      divide scores by √d_k (default), d_k, or nothing
  --backend naive|simd|parallel|fused
                            which kernels compute the steps (default parallel); fused never forms α
  --torch-weights           weights are PyTorch nn.Linear weights (d_k × d_model): transpose them
  --out DIR                 write DIR/output.npy and DIR/attn.npy (float32) instead of printing;
                            with --backend fused only output.npy (there is no α)
  --csv-header              the first line of each .csv file is a header to skip
  --max-memory SIZE         refuse inputs whose matrices need more (default 8G; K, M, G suffixes)
  --precision N             digits when printing, 0 to 8 (default 4)
  --time                    print how long each part took
  -h, --help                this text
)";

struct RunOptions {
    std::optional<std::string> x, wq, wk, wv, q, k, v, out;
    AttentionOptions attention{.causal = false, .scale = Scale::sqrt_dk, .backend = Backend::parallel};
    ReadOptions read;
    bool torch_weights = false, time = false, help = false;
    int precision = 4;
};

std::uint64_t parse_memory(const std::string& v) {
    std::uint64_t number = 0;
    std::size_t k = 0;
    for (; k < v.size() && v[k] >= '0' && v[k] <= '9'; ++k) {
        if (number > (std::uint64_t{1} << 50)) throw UsageError("run: --max-memory '" + v + "' is too large");
        number = number * 10 + static_cast<std::uint64_t>(v[k] - '0');
    }
    const std::string suffix = v.substr(k);
    const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
    if (k == 0 || shift < 0) throw UsageError("run: --max-memory takes a size like 512M or 8G, got '" + v + "'");
    return number << shift;
}

RunOptions parse(std::span<const std::string> args) {
    RunOptions o;
    const std::pair<const char*, std::optional<std::string>*> files[] = {
        {"--x", &o.x}, {"--wq", &o.wq}, {"--wk", &o.wk}, {"--wv", &o.wv},
        {"--q", &o.q}, {"--k", &o.k},   {"--v", &o.v},   {"--out", &o.out}};
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string v;
        bool matched = false;
        for (const auto& [name, slot] : files) {
            if (option_value(args, i, name, v)) {
                *slot = v;
                matched = true;
                break;
            }
        }
        if (matched) continue;
        if (args[i] == "-h" || args[i] == "--help") o.help = true;
        else if (args[i] == "--causal") o.attention.causal = true;
        else if (args[i] == "--torch-weights") o.torch_weights = true;
        else if (args[i] == "--csv-header") o.read.csv_header = true;
        else if (args[i] == "--time") o.time = true;
        else if (option_value(args, i, "--scale", v)) o.attention.scale = parse_scale(v, "run");
        else if (option_value(args, i, "--backend", v)) o.attention.backend = parse_backend(v, "run");
        else if (option_value(args, i, "--max-memory", v)) o.read.max_bytes = parse_memory(v);
        else if (option_value(args, i, "--precision", v)) o.precision = parse_precision(v, "run");
        else throw UsageError("run: unknown option '" + args[i] + "' (see attn run --help)");
    }
    if (o.help) return o;
    const bool layer = o.x || o.wq || o.wk || o.wv, core = o.q || o.k || o.v;
    if (layer && core) throw UsageError("run: give either --x/--wq/--wk/--wv (full layer) or --q/--k/--v (core), not both");
    if (layer && !(o.x && o.wq && o.wk && o.wv)) throw UsageError("run: the full layer needs all of --x, --wq, --wk and --wv");
    if (core && !(o.q && o.k && o.v)) throw UsageError("run: the core needs all of --q, --k and --v");
    if (!layer && !core) throw UsageError("run: no input given (see attn run --help)");
    if (core && o.torch_weights) throw UsageError("run: --torch-weights applies to --wq/--wk/--wv, not to --q/--k/--v");
    return o;
}

// "a.npy (3×4) and b.npy (5×3): <why>": shapes that do not chain, with both files named.
[[noreturn]] void mismatch(const std::string& a, const Matrix& A, const std::string& b, const Matrix& B,
                           const std::string& why) {
    throw InputError(a + " (" + shape_string(A) + ") and " + b + " (" + shape_string(B) + "): " + why);
}

class Stopwatch {
public:
    double lap_ms() {
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        return ms;
    }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

int run_run(std::span<const std::string> args) {
    const RunOptions o = parse(args);
    if (o.help) {
        std::cout << help;
        return 0;
    }
    if (o.out) {  // refuse a bad output directory before any work
        struct stat st {};
        if (stat(o.out->c_str(), &st) != 0 && mkdir(o.out->c_str(), 0777) != 0)
            throw InputError(*o.out + ": cannot create directory: " + std::strerror(errno));
        if (stat(o.out->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw InputError(*o.out + ": not a directory");
    }
    Stopwatch clock;
    std::string timing;
    const auto lap = [&](const char* what) { timing += std::string(timing.empty() ? "" : ", ") + what + " " + format_number(float(clock.lap_ms()), 3) + " ms"; };

    Matrix Q, K, V;
    AttentionResult result;
    if (o.x) {
        const Matrix X = read_matrix(*o.x, o.read);
        Matrix W[3] = {read_matrix(*o.wq, o.read), read_matrix(*o.wk, o.read), read_matrix(*o.wv, o.read)};
        if (o.torch_weights)
            for (Matrix& w : W) w = transpose(w);
        lap("read");
        const std::string* names[3] = {&*o.wq, &*o.wk, &*o.wv};
        for (int k = 0; k < 3; ++k)
            if (W[k].rows() != X.cols())
                mismatch(*o.x, X, *names[k], W[k],
                         "X has " + std::to_string(X.cols()) + " columns (d_model) but the weight has " + std::to_string(W[k].rows()) +
                             " rows" + (o.torch_weights ? " after transposing" : "; if these are PyTorch weights, pass --torch-weights"));
        if (W[0].cols() != W[1].cols())
            mismatch(*o.wq, W[0], *o.wk, W[1], "W_Q and W_K must have the same number of columns (d_k)");
        auto p = SingleHeadAttention(W[0], W[1], W[2]).project(X, o.attention.backend);
        Q = std::move(p.Q);
        K = std::move(p.K);
        V = std::move(p.V);
        lap("steps 1–2 (projections)");
    } else {
        Q = read_matrix(*o.q, o.read);
        K = read_matrix(*o.k, o.read);
        V = read_matrix(*o.v, o.read);
        lap("read");
        if (Q.cols() != K.cols()) mismatch(*o.q, Q, *o.k, K, "Q and K must have the same number of columns (d_k)");
        if (K.rows() != V.rows()) mismatch(*o.k, K, *o.v, V, "K and V must have the same number of rows");
        if (o.attention.causal && Q.rows() != K.rows())
            mismatch(*o.q, Q, *o.k, K, "a causal mask needs as many queries as keys");
    }
    scaled_dot_product_attention_into(Q, K, V, o.attention, result);
    lap("steps 3–6 (attention)");

    const bool has_alpha = o.attention.backend != Backend::fused;
    if (o.out) {
        std::vector<std::pair<std::string, const Matrix*>> files = {{*o.out + "/output.npy", &result.output}};
        if (has_alpha) files.emplace_back(*o.out + "/attn.npy", &result.weights);
        write_npy_files(files);
        lap("write");
        std::cout << "wrote " << files[0].first << " (" << shape_string(result.output) << ")";
        if (has_alpha) std::cout << " and " << files[1].first << " (" << shape_string(result.weights) << ")";
        std::cout << "\n";
    } else {
        PrintOptions p;
        p.precision = o.precision;
        std::cout << "output O (" << shape_string(result.output) << ")\n" << format_matrix(result.output, p);
        if (has_alpha) std::cout << "\nattention weights α (" << shape_string(result.weights) << ")\n" << format_matrix(result.weights, p);
        else std::cout << "\nattention weights α: not formed by the fused backend (it never stores the n×n matrix)\n";
    }
    if (o.time) std::cout << "time: " << timing << "\n";
    return 0;
}

}  // namespace attn::cli
