// cli/run.cpp — `attn run`. Reads the matrices, checks that their shapes chain (naming the files),
// runs the library, then prints the results or writes them as .npy files.
#include "cli/run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "cli/args.hpp"
#include "io/io.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"
#include "matrix/size.hpp"

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
  --max-memory SIZE         refuse a run whose buffers (inputs, S/α, scratch, printed text) would
                            need more (default 8G; K, M, G suffixes)
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

// "512M", "8G", "1000": bytes, with every step of the arithmetic checked (17179869184G is 2⁶⁴ bytes,
// which would wrap around to 0).
std::uint64_t parse_memory(const std::string& v) {
    const std::size_t digits = std::min(v.find_first_not_of("0123456789"), v.size());
    const std::string suffix = v.substr(digits);
    const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
    if (digits == 0 || shift < 0) throw UsageError("run: --max-memory takes a size like 512M or 8G, got '" + v + "'");
    try {
        std::uint64_t number = 0;
        for (std::size_t k = 0; k < digits; ++k)
            number =
                checked_sum(checked_product(number, 10, "--max-memory"), std::uint64_t(v[k] - '0'), "--max-memory");
        return checked_product(number, std::uint64_t{1} << shift, "--max-memory");
    } catch (const std::length_error&) {
        throw UsageError("run: --max-memory '" + v + "' is too large to count (more than 16 EiB)");
    }
}

RunOptions parse(std::span<const std::string> args) {
    RunOptions o;
    const std::pair<const char*, std::optional<std::string>*> files[] = {
        {"--x", &o.x}, {"--wq", &o.wq}, {"--wk", &o.wk}, {"--wv", &o.wv},
        {"--q", &o.q}, {"--k", &o.k},   {"--v", &o.v},   {"--out", &o.out}};
    std::set<std::string> seen;
    for (std::size_t i = 0; i < args.size(); ++i) {
        reject_repeated(seen, args[i], "run");
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
    if (layer && core)
        throw UsageError("run: give either --x/--wq/--wk/--wv (full layer) or --q/--k/--v (core), not both");
    if (layer && !(o.x && o.wq && o.wk && o.wv))
        throw UsageError("run: the full layer needs all of --x, --wq, --wk and --wv");
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

// The --out directory: checked before any work (it exists as a directory, or its parent does), but
// created only when there is something to write, so a refused run leaves nothing behind.
void check_out_directory(const std::string& dir) {
    struct stat st {};
    if (stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) throw InputError(dir + ": not a directory");
        return;
    }
    const auto slash =
        dir.find_last_not_of('/') == std::string::npos ? std::string::npos : dir.rfind('/', dir.find_last_not_of('/'));
    const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
    if (stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw InputError(dir + ": cannot create directory: " + parent + " is not an existing directory");
}

// Writes the files into `dir`, creating it if needed; a directory created here is removed again
// when the write fails.
void write_outputs(const std::string& dir, const std::vector<std::pair<std::string, const Matrix*>>& files) {
    const bool created = mkdir(dir.c_str(), 0777) == 0;
    if (!created && errno != EEXIST) throw InputError(dir + ": cannot create directory: " + std::strerror(errno));
    try {
        write_npy_files(files);
    } catch (...) {
        if (created) rmdir(dir.c_str());
        throw;
    }
}

// Text of a printed matrix: each value becomes a std::string cell (32 bytes) and its characters in
// the output (a sign, digits, the point, padding): about 48 + precision bytes.
std::uint64_t printing_bytes(std::size_t rows, std::size_t cols, int precision) {
    return checked_product(checked_product(rows, cols, "printing"), 48 + std::uint64_t(precision), "printing");
}

}  // namespace

int run_command(std::span<const std::string> args) {
    const RunOptions o = parse(args);
    if (o.help) {
        std::cout << help;
        return 0;
    }
    if (o.out) check_out_directory(*o.out);  // refuse a bad output directory before any work
    Stopwatch clock;
    std::string timing;
    const auto lap = [&](const char* what) {
        timing +=
            std::string(timing.empty() ? "" : ", ") + what + " " + format_number(float(clock.lap_ms()), 3) + " ms";
    };

    // Every large buffer of the run is charged to the budget before it is allocated: the inputs as
    // they are read, then what the projections and the attention will need.
    MemoryBudget budget(o.read.max_bytes, "the --max-memory limit");
    const auto read = [&](const std::string& path) {
        ReadOptions r = o.read;
        r.max_bytes = budget.left();
        Matrix m = read_matrix(path, r);
        budget.charge(matrix_bytes(m.rows(), m.cols()), path + " (" + shape_string(m) + ")");
        return m;
    };
    // Errors of the chain (a size that cannot be counted, a value range it refuses) name the files.
    std::string inputs;
    const auto about_inputs = [&](auto&& step) {
        try {
            step();
        } catch (const InputError&) {
            throw;
        } catch (const std::exception& e) {
            throw InputError(inputs + ": " + e.what());
        }
    };
    const Backend backend = o.attention.backend;
    const std::string backend_name = "the " + to_string(backend) + " backend";
    Matrix Q, K, V;
    if (o.x) {
        const Matrix X = read(*o.x);
        Matrix W[3] = {read(*o.wq), read(*o.wk), read(*o.wv)};
        if (o.torch_weights) {
            for (Matrix& w : W) {
                budget.charge(matrix_bytes(w.rows(), w.cols()), "transposing the PyTorch weights");
                w = transpose(w);
            }
        }
        lap("read");
        const std::string* names[3] = {&*o.wq, &*o.wk, &*o.wv};
        for (int k = 0; k < 3; ++k)
            if (W[k].rows() != X.cols())
                mismatch(*o.x, X, *names[k], W[k],
                         "X has " + std::to_string(X.cols()) + " columns (d_model) but the weight has " +
                             std::to_string(W[k].rows()) + " rows" +
                             (o.torch_weights ? " after transposing"
                                              : "; if these are PyTorch weights, pass --torch-weights"));
        if (W[0].cols() != W[1].cols())
            mismatch(*o.wq, W[0], *o.wk, W[1], "W_Q and W_K must have the same number of columns (d_k)");
        if (W[0].cols() == 0)
            mismatch(*o.wq, W[0], *o.wk, W[1],
                     "d_k = 0: W_Q and W_K have no columns, so no query can be compared with a key");
        inputs = *o.x + ", " + *o.wq + ", " + *o.wk + ", " + *o.wv;
        about_inputs([&] {
            budget.charge(projection_bytes(X.rows(), X.cols(), W[0].cols(), W[2].cols(), backend),
                          "steps 1–2 on " + backend_name + " (Q, K and V)");
            auto p = SingleHeadAttention(std::move(W[0]), std::move(W[1]), std::move(W[2])).project(X, backend);
            Q = std::move(p.Q);
            K = std::move(p.K);
            V = std::move(p.V);
        });
        lap("steps 1–2 (projections)");
    } else {
        Q = read(*o.q);
        K = read(*o.k);
        V = read(*o.v);
        lap("read");
        if (Q.cols() != K.cols()) mismatch(*o.q, Q, *o.k, K, "Q and K must have the same number of columns (d_k)");
        if (K.rows() != V.rows()) mismatch(*o.k, K, *o.v, V, "K and V must have the same number of rows");
        if (o.attention.causal && Q.rows() != K.rows())
            mismatch(*o.q, Q, *o.k, K, "a causal mask needs as many queries as keys");
        if (Q.cols() == 0)
            mismatch(*o.q, Q, *o.k, K, "d_k = 0: Q and K have no columns, so no query can be compared with a key");
        inputs = *o.q + ", " + *o.k + ", " + *o.v;
    }
    const bool has_alpha = backend != Backend::fused;
    AttentionResult result;
    about_inputs([&] {
        budget.charge(attention_bytes(Q.rows(), K.rows(), Q.cols(), V.cols(), backend),
                      "steps 3–6 on " + backend_name + " (" +
                          (has_alpha ? "S/α of " + shape_string(Q.rows(), K.rows()) +
                                           ", O and scratch; --backend fused never stores S"
                                     : std::string("O and per-thread scratch")) +
                          ")");
        if (!o.out) {
            std::uint64_t text = printing_bytes(Q.rows(), V.cols(), o.precision);
            if (has_alpha) text = checked_sum(text, printing_bytes(Q.rows(), K.rows(), o.precision), "printing");
            budget.charge(text, "printing the results as text (--out DIR writes .npy files instead)");
        }
        scaled_dot_product_attention_into(Q, K, V, o.attention, result);
    });
    lap("steps 3–6 (attention)");

    if (o.out) {
        std::vector<std::pair<std::string, const Matrix*>> files = {{*o.out + "/output.npy", &result.output}};
        if (has_alpha) files.emplace_back(*o.out + "/attn.npy", &result.weights);
        write_outputs(*o.out, files);
        lap("write");
        std::cout << "wrote " << files[0].first << " (" << shape_string(result.output) << ")";
        if (has_alpha) std::cout << " and " << files[1].first << " (" << shape_string(result.weights) << ")";
        std::cout << "\n";
    } else {
        PrintOptions p;
        p.precision = o.precision;
        std::cout << "output O (" << shape_string(result.output) << ")\n" << format_matrix(result.output, p);
        if (has_alpha)
            std::cout << "\nattention weights α (" << shape_string(result.weights) << ")\n"
                      << format_matrix(result.weights, p);
        else std::cout << "\nattention weights α: not formed by the fused backend (it never stores the n×n matrix)\n";
    }
    if (o.time) std::cout << "time: " << timing << "\n";
    return 0;
}

}  // namespace attn::cli
