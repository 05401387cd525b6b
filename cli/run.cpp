// cli/run.cpp — `attn run`, in the order run_command reads: load the files (each charged to the
// memory budget as it is read), describe the library's call on them (attention/call.hpp: each file a
// view, named by its file in every message; the library checks, converts, charges what it allocates
// and computes), then print the shapes understood and the results, or write them as .npy files of
// their operands' rank.
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
#include "attention/run.hpp"
#include "cli/args.hpp"
#include "io/io.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"
#include "matrix/size.hpp"

namespace attn::cli {

namespace {

const char* const help = R"(Usage: attn run --x X --wq WQ --wk WK --wv WV [options]     the full layer
       attn run --q Q --k K --v V [options]                     the core softmax(Q·Kᵀ/√d_k)·V

Reads .npy (NumPy 1.0/2.0, float32 or float64, C order) or .csv (2-D: one row per line, values
separated by commas) files, chosen by extension. Weights follow the lesson: Q = X·W_Q with W_Q of
shape (d_model × d_k); the layer's files are 2-D.

Q, K and V have one rank: 2-D (L, E) is one head; 3-D (H, L, E) heads; 4-D (B, H, L, E) batches of
heads (more leading dimensions are the batch too), with K (…, H_kv, S, E) and V (…, H_kv, S, E_v).
H is a multiple of H_kv: query head h reads key/value head h / (H / H_kv) (grouped-query attention).
The results have the queries' rank, and are printed head by head, numbered from 0 as NumPy indexes
them. A query that no key may attend (under --mask or --causal) gets output 0.

Options:
  --mask M                  a mask over the scores (of the heads, or of the layer), broadcast to
                            (B, H, L, S) as NumPy broadcasts: boolean (true: may attend) or float,
                            added after the scale (−∞ allowed)
  --causal                  causal mask: query i sees only keys j ≤ i (aligned top-left, also when
                            L ≠ S); with --mask, both apply
  --scale sqrt|dk|none      divide scores by √d_k (default), d_k, or nothing
  --backend naive|simd|parallel|fused
                            which kernels compute the steps (default parallel); fused never forms α
  --dtype f32|bf16          the products' operands in float32 (default) or rounded to bfloat16 and
                            summed in float32 (--backend fused only; no --grad-output)
  --kv-dtype f32|bf16|f16   K and V, once read, kept in a key/value cache of this type (--q/--k/--v
                            only): float32, or rounded to bfloat16 or float16, half the bytes to
                            read; Q and O stay float32; every backend reads it (fused in place);
                            no --grad-output with bf16 or f16
  --torch-weights           weights are PyTorch nn.Linear weights (d_k × d_model): transpose them
  --grad-output DO          the gradient ∂L/∂O of some loss (the output's shape): run the backward
                            too, and print (or, with --out, write) the gradients of Q, K and V, and
                            with --x those of X, W_Q, W_K and W_V
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
    std::optional<std::string> x, wq, wk, wv, q, k, v, grad_output, mask, out;
    std::optional<KvDtype> kv_dtype;  // --kv-dtype: K and V rounded into a cache of this type
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
        {"--x", &o.x},       {"--wq", &o.wq},  {"--wk", &o.wk}, {"--wv", &o.wv},
        {"--q", &o.q},       {"--k", &o.k},    {"--v", &o.v},   {"--grad-output", &o.grad_output},
        {"--mask", &o.mask}, {"--out", &o.out}};
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
        else if (option_value(args, i, "--kv-dtype", v, "run")) o.kv_dtype = parse_kv_dtype(v, "run");
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

// Which file each operand came from, in the chain's order (X, W_Q, W_K, W_V or Q, K, V, then dO with
// --grad-output and the mask with --mask): the library names each operand by its file in its own
// messages (OperandNames), and an error raised on the way is told after the list of every file:
// "<files>: <the library's message>".
class FileNames {
public:
    using Names = std::vector<std::pair<std::string, std::string>>;  // (operand, file)

    explicit FileNames(const RunOptions& o)
        : names_(o.x ? Names{{"X", *o.x}, {"W_Q", *o.wq}, {"W_K", *o.wk}, {"W_V", *o.wv}}
                     : Names{{"Q", *o.q}, {"K", *o.k}, {"V", *o.v}}) {
        if (o.grad_output) names_.emplace_back("dO", *o.grad_output);
        if (o.mask) names_.emplace_back("mask", *o.mask);
        for (const auto& name : names_) files_ += (files_.empty() ? "" : ", ") + name.second;
        if (o.x) operands_ = {.X = *o.x, .W_Q = *o.wq, .W_K = *o.wk, .W_V = *o.wv};
        else operands_ = {.Q = *o.q, .K = *o.k, .V = *o.v};
        if (o.grad_output) operands_.dO = *o.grad_output;
        if (o.mask) operands_.mask = *o.mask;
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

// ---- the files, and the library's call on them ------------------------------------------------------

std::string file_and_shape(const std::string& path, const Array& a) {
    return path + " (" + shape_string(a.shape) + ")";
}

// What an array read takes in memory: a byte per bool, four per float.
std::uint64_t array_bytes(const Array& a) {
    std::uint64_t count = 1;
    for (const std::size_t d : a.shape) count *= d;  // the reader checked the product
    return a.boolean() ? count : count * sizeof(float);
}

// The files, in the chain's order, each charged to the budget as it is read (the reader refuses to
// go past what is left of the limit); a mask may hold −∞, which never attends.
std::vector<Array> load(const FileNames& files, const RunOptions& o, MemoryBudget& budget) {
    std::vector<Array> arrays;
    for (const auto& [operand, path] : files.in_order()) {
        ReadOptions r = o.read;
        r.taken = budget.used();
        r.minus_infinity = operand == "mask";
        const Array& a = arrays.emplace_back(read_array(path, r));
        budget.charge(array_bytes(a), file_and_shape(path, a));
    }
    return arrays;
}

// An array read as a view of the call: its floats, or its booleans.
View view_of(const Array& a) {
    if (a.boolean()) return {a.truth.get(), a.shape, {}, Element::boolean};
    return {a.values.data(), a.shape};
}

// The run's one call on its files, in the order they were read (attention/call.hpp): the layer from
// --x and the weights, or attention on --q, --k and --v (every rank the library reads); the backward
// too with --grad-output; each operand named by its file in the library's messages.
Call call_of(const std::vector<Array>& read, const FileNames& files, const RunOptions& o, MemoryBudget& budget) {
    Call call{.task = o.grad_output ? Task::forward_backward : Task::forward, .options = o.attention};
    std::size_t k = 0;
    for (std::optional<View>* operand :
         o.x ? std::vector{&call.X, &call.W_Q, &call.W_K, &call.W_V} : std::vector{&call.Q, &call.K, &call.V})
        *operand = view_of(read[k++]);
    if (o.grad_output) call.dO = view_of(read[k++]);
    if (o.mask) call.mask = view_of(read[k++]);
    call.torch_weights = o.torch_weights;
    call.kv_dtype = o.kv_dtype;
    call.options.budget = &budget;
    call.options.names = files.operands();
    return call;
}

// ---- what the run understood, and its results ------------------------------------------------------

std::string counted(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// An operand's shape in words: "1 batch × 8 heads × 16 tokens × 64" (the layer's weights: "4×3"); the
// leading dimensions of a higher rank are the batches ("6 batches (2×3) × …").
std::string in_words(const std::string& operand, const Shape& s) {
    if (operand.starts_with("W_")) return shape_string(s);
    std::string words;
    if (s.size() >= 4) {
        const Shape leading(s.begin(), s.end() - 3);
        std::size_t batches = 1;
        for (const std::size_t d : leading) batches *= d;
        words +=
            counted(batches, "batch", "batches") + (s.size() > 4 ? " (" + shape_string(leading) + ")" : "") + " × ";
    }
    if (s.size() >= 3) words += counted(s[s.size() - 3], "head", "heads") + " × ";
    return words + counted(s[s.size() - 2], "token", "tokens") + " × " + std::to_string(s.back());
}

const char* const score_axes[] = {"(L, S)", "(H, L, S)", "(B, H, L, S)", "(N..., H, L, S)"};

// One short line per file ("Q q.npy: 8 heads × 16 tokens × 64"), the scores the mask covers, the
// grouping of the heads when key/value heads are shared, and the key/value cache's type with
// --kv-dtype. (What the library accepted: it refused any shape it cannot read.)
std::string understood(const FileNames& files, const std::vector<Array>& arrays, std::optional<KvDtype> kv_dtype) {
    std::string text;
    const auto& names = files.in_order();
    const std::size_t rank = arrays[0].shape.size();
    for (std::size_t k = 0; k < names.size(); ++k) {
        const auto& [operand, path] = names[k];
        const Array& a = arrays[k];
        if (operand != "mask") {
            text += operand + " " + path + ": " + in_words(operand, a.shape) + "\n";
            continue;
        }
        Shape scores = names[0].first == "X" ? Shape{arrays[0].shape[0], arrays[0].shape[0]} : arrays[0].shape;
        if (names[0].first != "X") scores.back() = arrays[1].shape[rank - 2];
        text += "mask " + path + ": " + (a.boolean() ? "boolean " : "additive ") + shape_string(a.shape) +
                ", broadcast to the scores " + shape_string(scores) + " " +
                score_axes[std::min<std::size_t>(scores.size(), 5) - 2] + "\n";
    }
    if (names[0].first == "Q" && rank >= 3) {
        const std::size_t heads = arrays[0].shape[rank - 3], kv_heads = arrays[1].shape[rank - 3];
        if (kv_heads < heads)
            text += counted(heads, "query head", "query heads") + " share " +
                    counted(kv_heads, "key/value head", "key/value heads") + "\n";
    }
    if (kv_dtype)
        text += "K and V cached as " + to_string(*kv_dtype) + ", " + (*kv_dtype == KvDtype::f32 ? "4" : "2") +
                " bytes a value (Q and O float32)\n";
    return text;
}

// A result of the run as a file and as printed text: output.npy, "output O"; …
struct OutputFile {
    const char* file;
    std::string heading;
    const Result* result;
};

// "gradient dQ = ∂L/∂Q": how every gradient is introduced.
std::string gradient_heading(const char* symbol) {
    return std::string("gradient ") + symbol + " = ∂L/∂" + (symbol + 1);
}

// Every result the run formed, in the order they are printed and written: O, α when the backend
// forms it, then the gradients (of X and the weights first, from --x).
std::vector<OutputFile> outputs_of(const Results& r) {
    const OutputFile all[] = {{"output", "output O", &r.output},
                              {"attn", "attention weights α", &r.weights},
                              {"grad_x", gradient_heading("dX"), &r.dX},
                              {"grad_w_q", gradient_heading("dW_Q"), &r.dW_Q},
                              {"grad_w_k", gradient_heading("dW_K"), &r.dW_K},
                              {"grad_w_v", gradient_heading("dW_V"), &r.dW_V},
                              {"grad_q", gradient_heading("dQ"), &r.dQ},
                              {"grad_k", gradient_heading("dK"), &r.dK},
                              {"grad_v", gradient_heading("dV"), &r.dV}};
    std::vector<OutputFile> formed;
    for (const OutputFile& f : all)
        if (!f.result->shape.empty()) formed.push_back(f);
    return formed;
}

// Every file a run can write, in the order it writes them.
const char* const result_files[] = {"output",   "attn",   "grad_x", "grad_w_q", "grad_w_k",
                                    "grad_w_v", "grad_q", "grad_k", "grad_v"};

// DIR/output.npy, DIR/attn.npy and the gradients' files, all or nothing, each of its operand's rank.
// A file of the set that this run does not write (attn.npy with the fused backend, which forms no α;
// a gradient without --grad-output, or X's and the weights' from --q/--k/--v) would sit beside this
// run's output as if it were its own, so one left by an earlier run is removed in the same step.
// Returns the status line that reports them.
std::string write_results(const std::vector<OutputFile>& outputs, const std::string& dir) {
    std::vector<NpyOutput> files;
    std::string status, removed;
    for (const char* name : result_files) {
        const std::string path = dir + "/" + name + ".npy";
        const auto it = std::find_if(outputs.begin(), outputs.end(),
                                     [&](const OutputFile& f) { return std::string(f.file) == name; });
        if (it == outputs.end()) {
            files.emplace_back(path, nullptr);
            if (::access(path.c_str(), F_OK) == 0) removed += (removed.empty() ? "" : ", ") + path;
            continue;
        }
        files.emplace_back(path, &it->result->values, it->result->shape);
        status += (status.empty() ? "wrote " : ", ") + path + " (" + shape_string(it->result->shape) + ")";
    }
    write_outputs(dir, files);
    if (!removed.empty()) status += "; removed " + removed + " of an earlier run (not results of this one)";
    return status;
}

// With --out the results are the files, and standard output only reports them: once the files are
// in place, the run has succeeded, and a report that cannot be written (a full disk, a closed
// descriptor) is a warning on standard error, not a failure that would tell a script to roll back
// files that are in fact new. One write(2), so nothing of it stays buffered for a later flush.
void report_files(const std::string& shapes, const std::string& status, const std::string& time_line) {
    const std::string text = shapes + status + "\n" + time_line;
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

// Head i's batch, as NumPy indexes it: "1" for (B, H, L, E), "(1, 0)" for more leading dimensions.
std::string batch_of(const Shape& shape, std::size_t i) {
    const std::size_t axes = shape.size() - 3;
    std::string index;
    for (std::size_t axis = axes; axis-- > 0; i /= shape[axis])
        index = std::to_string(i % shape[axis]) + (index.empty() ? "" : ", ") + index;
    return axes == 1 ? index : "(" + index + ")";
}

// A result as text: a matrix under its heading, or, with heads, each head under a heading of its own
// ("output O, batch 1, head 3 (16×64)"), numbered from 0 as NumPy indexes them.
void print_result(const OutputFile& f, const PrintOptions& p) {
    const Shape& shape = f.result->shape;
    const Matrix& values = f.result->values;
    const std::size_t rank = shape.size(), rows = shape[rank - 2], cols = shape[rank - 1];
    if (rank == 2) {
        std::cout << "\n" << f.heading << " (" << shape_string(values) << ")\n";
        print_matrix(std::cout, values, p);
        return;
    }
    const std::size_t heads = shape[rank - 3], count = rows ? values.rows() / rows : 0;
    for (std::size_t i = 0; i < count; ++i) {
        std::cout << "\n"
                  << f.heading << (rank >= 4 ? ", batch " + batch_of(shape, i / heads) : "") << ", head " << i % heads
                  << " (" << shape_string(rows, cols) << ")\n";
        print_matrix(std::cout, Matrix::borrow(values.data() + i * rows * cols, rows, cols), p);
    }
}

void print_results(const std::vector<OutputFile>& outputs, bool has_alpha, int precision) {
    PrintOptions p;
    p.precision = precision;
    for (const OutputFile& f : outputs) {
        print_result(f, p);
        if (&f == &outputs.front() && !has_alpha)
            std::cout << "\nattention weights α: not formed by the fused backend (it never stores the n×n matrix)\n";
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
    Stopwatch clock;
    // Every large buffer of the run is charged to the budget before it is allocated: the inputs as
    // they are read, then, inside the library and before its first step, what the call will need.
    // (Printing streams row by row, and needs none.)
    MemoryBudget budget(o.read.max_bytes, "the --max-memory limit");
    const std::vector<Array> read = load(files, o, budget);
    clock.lap("read");
    Results results;
    try {
        run(call_of(read, files, o, budget), results);
    } catch (const DModelMismatch& e) {  // X against the weights: what PyTorch's layout causes
        throw InputError(
            files.all() + ": " + e.what() +
            (o.torch_weights ? "" : "; if these are PyTorch weights (d_k × d_model), pass --torch-weights"));
    } catch (const std::exception& e) {  // shapes, float range, the budget: told after the files
        throw InputError(files.all() + ": " + e.what());
    }
    clock.lap(o.grad_output ? (o.x ? "steps 1–6 and grads 6–1 (the layer)" : "steps 3–6 and grads 6–3 (attention)")
                            : (o.x ? "steps 1–6 (the layer)" : "steps 3–6 (attention)"));
    const std::string shapes = understood(files, read, o.kv_dtype);
    const std::vector<OutputFile> outputs = outputs_of(results);
    if (o.out) {
        const std::string status = write_results(outputs, *o.out);
        clock.lap("write");
        report_files(shapes, status, o.time ? "time: " + clock.laps() + "\n" : "");
        return 0;
    }
    std::cout << shapes;
    print_results(outputs, !results.weights.shape.empty(), o.precision);
    if (o.time) std::cout << "time: " << clock.laps() << "\n";
    return 0;
}

}  // namespace attn::cli
