// cli/run.cpp — `attn run`, in the order run_command reads: load the matrix files (each charged to the
// memory budget as it is read), make one library call (which charges what it allocates and names
// each matrix by its file), then print the results or write them as .npy files.
#include "cli/run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
  --dtype f32|bf16          the products' operands in float32 (default) or rounded to bfloat16 and
                            summed in float32 (--backend fused only; no --grad-output)
  --torch-weights           weights are PyTorch nn.Linear weights (d_k × d_model): transpose them
  --grad-output DO          the gradient ∂L/∂O of some loss (n × d_v): run the backward too, and
                            print (or, with --out, write) the gradients of Q, K and V, and with
                            --x those of X, W_Q, W_K and W_V
  --out DIR                 write DIR/output.npy and DIR/attn.npy (float32) instead of printing;
                            with --backend fused only output.npy (there is no α); with
                            --grad-output also grad_q.npy, grad_k.npy, grad_v.npy (and grad_x.npy,
                            grad_w_q.npy, grad_w_k.npy, grad_w_v.npy), all or nothing
  --csv-header              the first line of each .csv file is a header to skip
  --max-memory SIZE         refuse a run whose buffers (inputs, Q/K/V, S/α, O, scratch) would need
                            more (default 8G; K, M, G suffixes); printing streams and needs none
  --precision N             digits when printing, 0 to 8 (default 4)
  --time                    print how long each part took
  -h, --help                this text
)";

struct RunOptions {
    std::optional<std::string> x, wq, wk, wv, q, k, v, grad_output, out;
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
        {"--x", &o.x},    {"--wq", &o.wq}, {"--wk", &o.wk}, {"--wv", &o.wv},
        {"--q", &o.q},    {"--k", &o.k},   {"--v", &o.v},   {"--grad-output", &o.grad_output},
        {"--out", &o.out}};
    std::set<std::string> seen;
    for (std::size_t i = 0; i < args.size(); ++i) {
        reject_repeated(seen, args[i], "run");
        std::string v;
        bool matched = false;
        for (const auto& [name, slot] : files) {
            if (option_value(args, i, name, v, "run")) {
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
        else if (option_value(args, i, "--scale", v, "run")) o.attention.scale = parse_scale(v, "run");
        else if (option_value(args, i, "--backend", v, "run")) o.attention.backend = parse_backend(v, "run");
        else if (option_value(args, i, "--dtype", v, "run")) o.attention.dtype = parse_dtype(v, "run");
        else if (option_value(args, i, "--max-memory", v, "run")) o.read.max_bytes = parse_memory(v);
        else if (option_value(args, i, "--precision", v, "run")) o.precision = parse_precision(v, "run");
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
    if (o.out && o.out->empty()) throw UsageError("run: --out needs a directory name, got an empty one");
    return o;
}

// Which file each matrix of the chain came from, in the chain's order (X, W_Q, W_K, W_V or Q, K, V,
// then dO with --grad-output):
// the library names each operand by its file in its own messages (OperandNames), and an error
// raised on the way is told after the list of every file: "<files>: <the library's message>".
class FileNames {
public:
    using Names = std::vector<std::pair<std::string, std::string>>;  // (matrix, file)

    explicit FileNames(const RunOptions& o)
        : names_(o.x ? Names{{"X", *o.x}, {"W_Q", *o.wq}, {"W_K", *o.wk}, {"W_V", *o.wv}}
                     : Names{{"Q", *o.q}, {"K", *o.k}, {"V", *o.v}}) {
        if (o.grad_output) names_.emplace_back("dO", *o.grad_output);
        for (const auto& name : names_) files_ += (files_.empty() ? "" : ", ") + name.second;
        if (o.x) operands_ = {.X = *o.x, .W_Q = *o.wq, .W_K = *o.wk, .W_V = *o.wv};
        else operands_ = {.Q = *o.q, .K = *o.k, .V = *o.v};
        if (o.grad_output) operands_.dO = *o.grad_output;
    }
    const Names& in_order() const { return names_; }
    const OperandNames& operands() const { return operands_; }
    const std::string& all() const { return files_; }

private:
    Names names_;
    OperandNames operands_;
    std::string files_;
};

// How long each part of the run took: "read 0.120 ms, steps 3–6 (attention) 1.503 ms, …".
class Stopwatch {
public:
    void lap(const char* what) {
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        laps_ += std::string(laps_.empty() ? "" : ", ") + what + " " + format_number(float(ms), 3) + " ms";
    }
    const std::string& laps() const { return laps_; }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
    std::string laps_;
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
void write_outputs(const std::string& dir, const std::vector<NpyOutput>& files) {
    const bool created = mkdir(dir.c_str(), 0777) == 0;
    if (!created && errno != EEXIST) throw InputError(dir + ": cannot create directory: " + std::strerror(errno));
    try {
        write_npy_files(files);
    } catch (...) {
        if (created) rmdir(dir.c_str());
        throw;
    }
}

// The matrix files, in the chain's order, each charged to the budget as it is read (the reader
// refuses to go past what is left); PyTorch's weights (d_k × d_model) transposed to the lesson's.
std::vector<Matrix> load(const FileNames& files, const RunOptions& o, MemoryBudget& budget) {
    std::vector<Matrix> matrices;
    for (const auto& [matrix, path] : files.in_order()) {
        ReadOptions r = o.read;
        r.max_bytes = budget.left();
        const Matrix& m = matrices.emplace_back(read_matrix(path, r));
        budget.charge(matrix_bytes(m.rows(), m.cols()), path + " (" + shape_string(m) + ")");
    }
    for (std::size_t k = 1; o.torch_weights && k < 4; ++k) {  // W_Q, W_K, W_V after X
        budget.charge(matrix_bytes(matrices[k].rows(), matrices[k].cols()), "transposing the PyTorch weights");
        matrices[k] = transpose(matrices[k]);
    }
    return matrices;
}

// What a run computed: the forward's result and, with --grad-output, each gradient under the name
// of its file (grad_q.npy, …) and the symbol it is printed with (dQ, …), in the order of both.
struct Computed {
    AttentionResult result;
    struct Gradient {
        const char* file;    // "grad_q"
        const char* symbol;  // "dQ"
        Matrix value;
    };
    std::vector<Gradient> gradients;
};

// Steps 1–6 by the library, in one call, which charges what it allocates to the budget before its
// first step and names each operand by its file: from --x and the weights, the layer's forward;
// from --q, --k and --v, the core. With --grad-output, the call that runs the backward as well.
Computed compute(std::vector<Matrix> read, const FileNames& files, const RunOptions& o, MemoryBudget& budget) {
    AttentionOptions options = o.attention;
    options.budget = &budget;
    options.names = files.operands();
    Computed c;
    if (!o.x && !o.grad_output) c.result = scaled_dot_product_attention(read[0], read[1], read[2], options);
    if (!o.x && o.grad_output) {
        AttentionPass pass = attention_forward_backward(read[0], read[1], read[2], read[3], options);
        c.result = std::move(pass.result);
        AttentionGradients& g = pass.gradients;
        c.gradients = {
            {"grad_q", "dQ", std::move(g.dQ)}, {"grad_k", "dK", std::move(g.dK)}, {"grad_v", "dV", std::move(g.dV)}};
    }
    if (!o.x) return c;
    const SingleHeadAttention layer(std::move(read[1]), std::move(read[2]), std::move(read[3]), options.names);
    if (!o.grad_output) {
        c.result = layer.forward(read[0], options);
        return c;
    }
    SingleHeadAttention::Pass pass = layer.forward_backward(read[0], read[4], options);
    c.result = std::move(pass.result);
    auto& g = pass.gradients;
    // With --torch-weights the weights' gradients go back to PyTorch's layout, like the weights came.
    const auto as_given = [&](Matrix& dW) { return o.torch_weights ? transpose(dW) : std::move(dW); };
    c.gradients = {{"grad_x", "dX", std::move(g.dX)},      {"grad_w_q", "dW_Q", as_given(g.dW_Q)},
                   {"grad_w_k", "dW_K", as_given(g.dW_K)}, {"grad_w_v", "dW_V", as_given(g.dW_V)},
                   {"grad_q", "dQ", std::move(g.qkv.dQ)},  {"grad_k", "dK", std::move(g.qkv.dK)},
                   {"grad_v", "dV", std::move(g.qkv.dV)}};
    return c;
}

// Every file a run can write, in the order it writes them.
const char* const gradient_files[] = {"grad_x", "grad_w_q", "grad_w_k", "grad_w_v", "grad_q", "grad_k", "grad_v"};

// DIR/output.npy, DIR/attn.npy and the gradients' files, all or nothing. A file of the set that this
// run does not write (attn.npy with the fused backend, which forms no α; a gradient without
// --grad-output, or X's and the weights' from --q/--k/--v) would sit beside this run's output as if
// it were its own, so one left by an earlier run is removed in the same step. Returns the status
// line that reports them.
std::string write_results(const Computed& c, bool has_alpha, const std::string& dir) {
    const std::string output = dir + "/output.npy", alpha = dir + "/attn.npy";
    std::vector<NpyOutput> files = {{output, &c.result.output}, {alpha, has_alpha ? &c.result.weights : nullptr}};
    std::string status = "wrote " + output + " (" + shape_string(c.result.output) + ")";
    if (has_alpha) status += ", " + alpha + " (" + shape_string(c.result.weights) + ")";
    for (const char* name : gradient_files) {
        const std::string path = dir + "/" + name + ".npy";
        const auto it = std::find_if(c.gradients.begin(), c.gradients.end(),
                                     [&](const Computed::Gradient& g) { return std::string(g.file) == name; });
        files.emplace_back(path, it == c.gradients.end() ? nullptr : &it->value);
        if (it != c.gradients.end()) status += ", " + path + " (" + shape_string(it->value) + ")";
    }
    std::string removed;
    for (const NpyOutput& file : files)
        if (!file.values && ::access(file.path.c_str(), F_OK) == 0)
            removed += (removed.empty() ? "" : ", ") + file.path;
    write_outputs(dir, files);
    if (!removed.empty()) status += "; removed " + removed + " of an earlier run (not results of this one)";
    return status;
}

// With --out the results are the files, and standard output only reports them: once the files are
// in place, the run has succeeded, and a report that cannot be written (a full disk, a closed
// descriptor) is a warning on standard error, not a failure that would tell a script to roll back
// files that are in fact new. One write(2), so nothing of it stays buffered for a later flush.
void report_files(const std::string& status, const std::string& time_line) {
    const std::string text = status + "\n" + time_line;
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t wrote = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) {
            std::cerr << "attn: warning: " << printable(status)
                      << "; the status line could not be written to standard output: " << std::strerror(errno) << "\n";
            return;
        }
        done += std::size_t(wrote);
    }
}

void print_results(const Computed& c, bool has_alpha, int precision) {
    PrintOptions p;
    p.precision = precision;
    std::cout << "output O (" << shape_string(c.result.output) << ")\n";
    print_matrix(std::cout, c.result.output, p);
    if (has_alpha) {
        std::cout << "\nattention weights α (" << shape_string(c.result.weights) << ")\n";
        print_matrix(std::cout, c.result.weights, p);
    } else std::cout << "\nattention weights α: not formed by the fused backend (it never stores the n×n matrix)\n";
    for (const Computed::Gradient& g : c.gradients) {
        std::cout << "\ngradient " << g.symbol << " = ∂L/∂" << (g.symbol + 1) << " (" << shape_string(g.value) << ")\n";
        print_matrix(std::cout, g.value, p);
    }
}

}  // namespace

int run_command(std::span<const std::string> args) {
    const RunOptions o = parse(args);
    if (o.help) {
        std::cout << help;
        return 0;
    }
    if (o.out) check_out_directory(*o.out);  // refuse a bad output directory before any work
    const FileNames files(o);
    const bool has_alpha = o.attention.backend != Backend::fused;
    Stopwatch clock;
    // Every large buffer of the run is charged to the budget before it is allocated: the inputs as
    // they are read, then, inside the library and before its first step, what the steps will need.
    // (Printing streams row by row, and needs none.)
    MemoryBudget budget(o.read.max_bytes, "the --max-memory limit");
    std::vector<Matrix> read = load(files, o, budget);
    clock.lap("read");
    Computed result;
    try {
        result = compute(std::move(read), files, o, budget);
    } catch (const DModelMismatch& e) {  // X against the weights: what PyTorch's layout causes
        throw InputError(files.all() + ": " + e.what() +
                         (o.torch_weights ? " (after transposing the --torch-weights)"
                                          : "; if these are PyTorch weights (d_k × d_model), pass --torch-weights"));
    } catch (const std::exception& e) {  // shapes, float range, the budget: told after the files
        throw InputError(files.all() + ": " + e.what());
    }
    clock.lap(o.grad_output ? (o.x ? "steps 1–6 and grads 6–1 (the layer)" : "steps 3–6 and grads 6–3 (attention)")
                            : (o.x ? "steps 1–6 (the layer)" : "steps 3–6 (attention)"));
    if (o.out) {
        const std::string status = write_results(result, has_alpha, *o.out);
        clock.lap("write");
        report_files(status, o.time ? "time: " + clock.laps() + "\n" : "");
        return 0;
    }
    print_results(result, has_alpha, o.precision);
    if (o.time) std::cout << "time: " << clock.laps() << "\n";
    return 0;
}

}  // namespace attn::cli
