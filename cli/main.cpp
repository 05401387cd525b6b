// cli/main.cpp — `attn`: picks the subcommand, turns every error into "attn: error: …" and exit 2.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "cli/args.hpp"
#include "cli/exercise.hpp"
#include "cli/learn.hpp"
#include "cli/run.hpp"
#include "cli/walk.hpp"
#include "io/io.hpp"

namespace {

const char* const usage = R"(Usage: attn <command> [options]

Single-head scaled dot-product attention, computed the way the lesson writes it.

Commands:
  walk        the lesson's worked example (猫 坐 地毯), every step printed with its numbers;
              --grad runs it backwards: the gradients that train W_Q, W_K and W_V
  run         the chain on your own matrices (.npy or .csv), printed or written as .npy;
              --grad-output dO.npy adds the backward's gradients
  exercise N  the lesson's exercises 1–5 as experiments that measure and explain
  learn       W_Q and W_K (W_V too with --train-values) trained on a task with a known answer:
              watch α move
  variance    Monte Carlo of Var(q·k) before and after ÷√d_k

Options:
  -h, --help  this text (and `attn <command> --help` for a command's options)
  --version   version, the instruction sets the kernels were compiled for, those this CPU runs and
              the one in use, OpenMP threads, the CPU, its caches and the block sizes derived from them

Environment:
  ATTN_ISA    the instruction set the fast kernels use (sse2, avx2, avx512, avx512bf16 on x86-64;
              neon on AArch64); default: the widest this CPU runs
)";

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : " ") + name;
    return out;
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::cerr << usage;
        return 2;
    }
    const std::string& command = args[0];
    const std::span<const std::string> rest(args.data() + 1, args.size() - 1);
    if (command == "-h" || command == "--help" || command == "help") {
        std::cout << usage;
        return 0;
    }
    const attn::BuildInfo b = attn::build_info();  // also: an ATTN_ISA that cannot be used stops here
    if (command == "--version") {
        std::cout << "attn 0.1.0\n"
                  << "simd: " << b.isa << " (xsimd " << b.instruction_set << "), " << b.batch_width
                  << " floats per batch; compiled: " << joined(b.compiled) << "; this CPU runs: " << joined(b.supported)
                  << "\n"
                  << "openmp: "
                  << (b.openmp ? std::to_string(b.threads) + (b.threads == 1 ? " thread" : " threads")
                               : std::string("not built"))
                  << "\ncpu: " << b.cpu << "\ncaches: " << b.caches << "\nblocks: " << b.blocks << "\n";
        return 0;
    }
    if (command == "walk") return attn::cli::walk_command(rest);
    if (command == "run") return attn::cli::run_command(rest);
    if (command == "exercise") return attn::cli::exercise_command(rest);
    if (command == "learn") return attn::cli::learn_command(rest);
    if (command == "variance") return attn::cli::variance_command(rest);
    throw attn::cli::UsageError("unknown command '" + command + "' (see attn --help)");
}

// Everything `attn` prints goes through std::cout; a write that failed (a full disk, a closed pipe
// with SIGPIPE ignored) must not end in exit status 0 with the output lost.
int check_output_written(int status) {
    if (std::cout.flush()) return status;
    std::cerr << "attn: error: could not write the output (standard output: " << std::strerror(errno) << ")\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    attn::remove_temporaries_on_signals();  // Ctrl-C during `attn run --out` leaves no temporary
    // A closed pipe (`attn run … | head`) is a failed write like any other, reported with exit 2
    // (check_output_written), rather than a silent death by SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    try {
        return check_output_written(run(std::vector<std::string>(argv + 1, argv + argc)));
    } catch (const std::exception& e) {
        std::cout.flush();
        std::cerr << "attn: error: " << attn::printable(e.what()) << '\n';
        return 2;
    }
}
