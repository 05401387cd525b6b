// `attn run` against crafted files and hostile surroundings: every case ends in one
// "attn: error: …" line, exit 2, and nothing written — or, where it may run, in the right result.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "io/io.hpp"
#include "matrix/random.hpp"
#include "run_attn.hpp"
#include "simd/simd.hpp"
#include "temp_dir.hpp"

using attn::random_matrix;

using attn::Matrix;
using Catch::Contains;
using Catch::StartsWith;

namespace {

void check_refused(const RunResult& r, const std::string& message) {
    CHECK(r.status == 2);
    CHECK_THAT(r.err, StartsWith("attn: error: ") && Contains(message));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("attn run: crafted zero-width files claiming 2³² or 2⁶³+1 rows are refused, nothing written",
          "[cli][limits]") {
    const TempDir dir;
    const std::string q32 = dir.file("q32.npy", Matrix(std::size_t{1} << 32, 0));
    const std::string q63 = dir.file("q63.npy", Matrix((std::size_t{1} << 63) + 1, 0));
    const std::string k2 = dir.file("k2.npy", Matrix(2, 0));
    const std::string x62 = dir.file("x62.npy", Matrix(std::size_t{1} << 62, 0)), w = dir.file("w.npy", Matrix(0, 4));
    for (const std::string backend : {"naive", "simd", "parallel", "fused"}) {
        INFO(backend);
        const std::string out = " --backend " + backend + " --out " + dir.at("out");
        check_refused(run_attn("run --q " + q32 + " --k " + q32 + " --v " + q32 + out), "E = 0");
        check_refused(run_attn("run --q " + q63 + " --k " + k2 + " --v " + k2 + out), "E = 0");
        check_refused(run_attn("run --x " + x62 + " --wq " + w + " --wk " + w + " --wv " + w + out),
                      "x62.npy, " + w + ", " + w + ", " + w + ": ");
        CHECK(!std::filesystem::exists(dir.at("out")));  // not even the directory
    }
}

TEST_CASE("attn run: --max-memory covers S and scratch, printing needs none, and it cannot wrap around",
          "[cli][limits]") {
    const TempDir dir;
    const std::string big = dir.file("q.npy", Matrix(65536, 16));  // 4 MiB each; S would be 16 GiB
    const std::string inputs = "run --q " + big + " --k " + big + " --v " + big;
    check_refused(run_attn(inputs), "S/α (65536×65536) of steps 3–5 on the parallel backend");
    // the files (12 MiB) and O (4 MiB) are charged before S
    check_refused(run_attn(inputs),
                  "needs 16 GiB on top of 16 MiB already taken, more than the --max-memory limit of 8 GiB");
    // fused never stores S: where S (12000² floats, 549 MiB) does not fit, fused does
    const std::string narrow = dir.file("n.npy", Matrix(12000, 1, 0.5f));
    const std::string core = "run --q " + narrow + " --k " + narrow + " --v " + narrow + " --max-memory 256M";
    check_refused(run_attn(core), "S/α (12000×12000)");
    CHECK(run_attn(core + " --backend fused --out " + dir.at("fused")).status == 0);
    // Printing streams row by row: 2,621,440 printed values (some 20 MB of text) on top of 20 MiB of
    // inputs and O fit in 30M, since the text is never held whole.
    const std::string one = dir.file("one.npy", Matrix(1, 4)), wide = dir.file("wide.npy", Matrix(1, 2621440));
    const RunResult printed = run_attn("run --q " + one + " --k " + one + " --v " + wide + " --max-memory 30M");
    CHECK(printed.status == 0);
    CHECK(printed.out.size() > std::size_t{2621440} * 7);  // " 0.0000" a value
    check_refused(run_attn(inputs + " --max-memory 17179869184G"), "--max-memory '17179869184G' is too large to count");
    check_refused(run_attn(inputs + " --max-memory 20"), "more than the --max-memory limit of 20 bytes");
}

TEST_CASE("attn run: --max-memory's refusal names the limit as given and what the run needs", "[cli][limits]") {
    const TempDir dir;
    const std::string half = dir.file("q.npy", Matrix(512, 256)), whole = dir.file("v.npy", Matrix(1024, 256));
    // 512 KiB twice, then 1 MiB more: past 1536K (1.5 MiB), with 512 KiB of it still free
    check_refused(run_attn("run --q " + half + " --k " + half + " --v " + whole + " --max-memory 1536K"),
                  whole + ": shape (1024, 256) needs 1 MiB on top of 1 MiB already taken, more than the --max-memory " +
                      "limit of 1.5 MiB");
    // a buffer of the library's plan is told so too
    check_refused(run_attn("run --q " + half + " --k " + half + " --v " + half + " --max-memory 1792K"),
                  "O (512×256) of step 6 needs 512 KiB on top of 1.5 MiB already taken, more than the --max-memory " +
                      std::string("limit of 1.75 MiB"));
}

TEST_CASE("attn run: the whole run is charged before step 1 runs, so a run too large does no work first",
          "[cli][limits]") {
    const TempDir dir;
    // X·W_Q would leave float32 (each entry 4·10⁶⁰), which step 2 refuses as it runs; S would need
    // 16 GiB. The refusal names S: steps 1–2 never ran.
    const std::string x = dir.file("x.npy", Matrix(65536, 4, 1e30f)), w = dir.file("w.npy", Matrix(4, 4, 1e30f));
    const std::string layer = "run --x " + x + " --wq " + w + " --wk " + w + " --wv " + w;
    check_refused(run_attn(layer + " --out " + dir.at("out")),
                  "S/α (65536×65536) of steps 3–5 on the parallel backend");
    // with room for S, step 2 is reached and refuses, naming it
    check_refused(run_attn(layer + " --backend fused --out " + dir.at("out")), "step 2");
    CHECK(!std::filesystem::exists(dir.at("out")));
}

TEST_CASE("attn run: values beyond float32 in CSV are refused; scores that would overflow name the step",
          "[cli][limits]") {
    const TempDir dir;
    const std::string r = dir.text("r.csv", "7,1e39,1e-50,3\n");
    check_refused(run_attn("run --q " + r + " --k " + r + " --v " + r),
                  "r.csv: line 1, value 2 ('1e39') is outside the range of float32");
    const std::string q = dir.text("q.csv", "3e38,-3e38\n3e38,3e38\n"), k = dir.text("k.csv", "1,-1\n1,1\n");
    for (const std::string backend : {"naive", "simd", "parallel", "fused"})
        check_refused(run_attn("run --backend " + backend + " --q " + q + " --k " + k + " --v " + k),
                      "step 3 (S = Q·Kᵀ) could leave the float32 range");
    const std::string v = dir.text("v.csv", "3e38,1\n3e38,2\n");
    for (const std::string backend : {"naive", "simd", "parallel", "fused"})
        check_refused(run_attn("run --backend " + backend + " --q " + k + " --k " + k + " --v " + v), "step 6");
}

TEST_CASE("attn run: a failed write of the output exits 2 instead of 0", "[cli][limits]") {
    const TempDir dir;
    std::mt19937 rng(3);
    const std::string q = dir.file("q.npy", random_matrix(300, 8, rng));
    const std::string args = "run --q " + q + " --k " + q + " --v " + q;
    const RunResult full = run_attn(args + " >/dev/full");
    check_refused(full, "could not write the output (standard output: No space left on device)");
    // The reader goes away and SIGPIPE is ignored: the write fails with EPIPE, which must show.
    const std::string script =
        dir.text("closed_pipe.sh", "trap '' PIPE; " + attn_command() + " " + args +
                                       " 2>/dev/null | head -c 10 >/dev/null; echo ${PIPESTATUS[0]}\n");
    FILE* p = popen(("bash " + script).c_str(), "r");
    REQUIRE(p);
    char status[16] = {};
    REQUIRE(std::fgets(status, sizeof status, p));
    pclose(p);
    CHECK(std::string(status) == "2\n");
}

TEST_CASE("attn run --out: the directory is made only when there is something to write", "[cli][limits]") {
    const TempDir dir;
    const std::string q = dir.file("q.npy", Matrix(2, 2, 1.0f)), bad = dir.text("bad.csv", "1,x\n");
    check_refused(run_attn("run --q " + q + " --k " + q + " --v " + bad + " --out " + dir.at("new")), "bad.csv");
    CHECK(!std::filesystem::exists(dir.at("new")));
    check_refused(run_attn("run --q " + q + " --k " + q + " --v " + q + " --out " + dir.at("no/such/dir")),
                  "is not an existing directory");
    std::filesystem::create_directory(dir.at("new/attn.npy").substr(0, dir.at("new").size()));
    std::filesystem::create_directory(dir.at("new/attn.npy"));  // a directory where α would go
    check_refused(run_attn("run --q " + q + " --k " + q + " --v " + q + " --out " + dir.at("new")),
                  "a directory of that name is in the way");
    CHECK(!std::filesystem::exists(dir.at("new/output.npy")));  // output.npy was not left behind either
    REQUIRE(run_attn("run --q " + q + " --k " + q + " --v " + q + " --out " + dir.at("made")).status == 0);
    CHECK(std::filesystem::exists(dir.at("made/output.npy")));
}

TEST_CASE("attn run: a directory or FIFO as input, and a repeated option, get clear errors", "[cli][limits]") {
    const TempDir dir;
    const std::string q = dir.file("q.npy", Matrix(2, 2, 1.0f));
    std::filesystem::create_directory(dir.at("d.npy"));
    check_refused(run_attn("run --q " + dir.at("d.npy") + " --k " + q + " --v " + q), "d.npy: is a directory");
    REQUIRE(::mkfifo(dir.at("f.npy").c_str(), 0600) == 0);
    check_refused(run_attn("run --q " + dir.at("f.npy") + " --k " + q + " --v " + q), "f.npy: is not a regular file");
    check_refused(run_attn("run --q " + q + " --k " + q + " --v " + q + " --q " + q),
                  "run: --q is given more than once");
    check_refused(run_attn("walk --causal --causal"), "walk: --causal is given more than once");
}

TEST_CASE("attn variance and exercise accept every seed, 0 and the default 1 included", "[cli][limits]") {
    for (const std::string seed : {"0", "1", "4294967295"}) {
        INFO(seed);
        CHECK(run_attn("variance --samples 200 --seed " + seed).status == 0);
        CHECK(run_attn("exercise 2 --samples 20 --seed " + seed).status == 0);
    }
    check_refused(run_attn("variance --seed 4294967296"), "--seed takes a whole number from 0 to 4294967295");
    check_refused(run_attn("variance --samples 1"), "--samples takes a whole number from 2");
}

TEST_CASE("control characters from a file or a path reach the message escaped, on one line", "[cli][limits]") {
    const TempDir dir;
    const std::string good = dir.file("q.npy", Matrix(2, 2, 1.0f));
    // ESC [2J would clear the user's terminal; CR would overwrite the start of the line.
    const std::string hostile = dir.text("h.csv", "1,2\n3,\x1b[2J\r4\n");
    const RunResult r = run_attn("run --q " + good + " --k " + good + " --v " + hostile);
    check_refused(r, "h.csv");
    CHECK_THAT(r.err, Contains("\\x1b[2J\\x0d4"));
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.err.find('\r') == std::string::npos);
    // A newline in a file name (a path the user can type) stays inside the one line too.
    const RunResult path = run_attn("run --q " + good + " --k " + good + " --v '" + dir.at("a\nb.npy") + "'");
    check_refused(path, "a\\x0ab.npy: cannot open");
}

TEST_CASE("a closed pipe ends attn with exit 2 and a message, not a silent SIGPIPE", "[cli][limits]") {
    const TempDir dir;
    std::mt19937 rng(12);
    const std::string q = dir.file("q.npy", random_matrix(300, 8, rng));  // prints α: 300×300, far past a pipe's buffer
    const std::string script =
        dir.text("pipe.sh", attn_command() + " run --q " + q + " --k " + q + " --v " + q + " 2>" + dir.at("err.txt") +
                                " | head -c 10 >/dev/null\necho \"${PIPESTATUS[0]}\"\n");
    FILE* pipe = popen(("bash " + script).c_str(), "r");
    REQUIRE(pipe);
    char buf[32] = {};
    const std::size_t got = std::fread(buf, 1, sizeof buf - 1, pipe);
    pclose(pipe);
    CHECK(std::string(buf, got) == "2\n");  // was 141: killed by SIGPIPE, no message
    std::ifstream err(dir.at("err.txt"));
    std::string line;
    std::getline(err, line);
    CHECK_THAT(line, StartsWith("attn: error: could not write the output"));
}

// Scratch is charged for the threads that will run: one for a 2×3 problem (too little work for a
// team), and never more than one per block of rows, whatever OMP_NUM_THREADS asks for.
TEST_CASE("the fused backend is charged for the threads that run, not for OMP_NUM_THREADS", "[cli][limits]") {
    const TempDir dir;
    const std::string q = dir.file("q.npy", Matrix(2, 3, 0.5f));
    const RunResult r =
        run_attn("run --backend fused --max-memory 64M --q " + q + " --k " + q + " --v " + q, "OMP_NUM_THREADS=1000");
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(attn::simd::fused_team_size(2, 2, 3, 3) == 1);
    CHECK(attn::simd::fused_team_size(4096, 4096, 64, 64) <= std::size_t(attn::simd::max_threads()));
    CHECK(attn::simd::fused_team_size(13, 100000, 64, 64) <= 3);  // 13 rows: at most 3 strips of 6
}

// A CSV line of five million values under --max-memory 40M: a reader holding a view of every field,
// a growing vector and the file's text uncharged would peak far above the limit. The reader charges
// its text and its values before it holds them. The process's peak resident
// memory may exceed the limit only by the program itself (`attn --version` peaks at about 5 MiB).
// It is measured by a small Python parent (resource.RUSAGE_CHILDREN): a child forked from this test
// would count this process's own pages, held until its exec, in its peak.
TEST_CASE("the memory limit holds for the whole process while a CSV is parsed, by peak RSS", "[cli][limits]") {
    if (std::getenv("ATTN_WRAPPER")) {
        WARN("skipped under emulation: the peak RSS measured would be the emulator's");
        return;
    }
#if defined(__SANITIZE_ADDRESS__)
    constexpr bool measurable = false;  // GCC's macro; Clang's is below
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    constexpr bool measurable = false;
#else
    constexpr bool measurable = true;
#endif
#else
    constexpr bool measurable = true;
#endif
    const TempDir dir;
    std::string line;
    for (int k = 0; k < 5000000; ++k) line += k ? ",0.5" : "0.5";
    const std::string wide = dir.text("wide.csv", line + "\n");  // 20 MB of text, 5M values
    const std::string measure = dir.text(
        "peak.py",
        "import resource, subprocess, sys\n"
        "status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n");
    const auto run_measured = [&](const char* limit, int& status) {
        const std::string command = "python3 " + measure + " " + std::getenv("ATTN_EXE") + " run --q " + wide +
                                    " --k " + wide + " --v " + wide + " --max-memory " + limit + " --out " +
                                    dir.at("out");
        FILE* pipe = popen(command.c_str(), "r");
        REQUIRE(pipe);
        long kib = -1;
        REQUIRE(std::fscanf(pipe, "%d %ld", &status, &kib) == 2);
        pclose(pipe);
        return double(kib) / 1024.0;  // MiB
    };
    int status = 0;
    const double refused = run_measured("40M", status);
    CHECK(status == 2);  // 20 MB of text and 2 × 19 MiB of values do not fit in 40 MiB
    const double ran = run_measured("128M", status);
    CHECK(status == 0);
    if (!measurable) {
        WARN("peak RSS not checked: AddressSanitizer's shadow memory is part of it (" << refused << " and " << ran
                                                                                      << " MiB)");
        return;
    }
    CHECK(refused <= 40 + 8);
    CHECK(ran <= 128 + 8);
}

namespace {

// Shell words that run `attn` with tests/fs_shim.cpp preloaded and `settings` (its variables) set.
// Under an emulator the preload is handed to the emulated program (QEMU_SET_ENV), not the emulator.
// AddressSanitizer wants its runtime first among the preloads; the shim is not instrumented.
std::string with_shim(const std::string& settings) {
    const char* path = std::getenv("ATTN_FS_SHIM");
    if (!path) throw std::runtime_error("ATTN_FS_SHIM is not set (tests/meson.build sets it to the built fs_shim)");
    const std::string shim = path;
    const std::string preload = std::getenv("ATTN_WRAPPER") ? "QEMU_SET_ENV=LD_PRELOAD=" + shim : "LD_PRELOAD=" + shim;
    return settings + " " + preload + " ASAN_OPTIONS=\"${ASAN_OPTIONS}:verify_asan_link_order=0\"";
}

// Files in `dir` whose names start with '.': temporaries or second names a write left behind.
std::vector<std::string> hidden_files(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().filename().string().starts_with(".")) names.push_back(e.path().filename().string());
    return names;
}

}  // namespace

// Without RENAME_EXCHANGE (NFS, vfat, FUSE), renaming the old file aside before renaming the new one
// in would leave a reader polling output.npy an instant with no file. Every rename keeps output.npy
// in place; the old file's second name (a hard link, or a copy where there are none) is what a
// failed pair is rolled back from.
TEST_CASE("attn run --out without RENAME_EXCHANGE: output.npy never goes missing, and a failure still rolls back",
          "[cli][limits][output]") {
    const TempDir dir;
    std::mt19937 rng(42);
    const std::string q_old = dir.file("q_old.npy", random_matrix(5, 4, rng)),
                      q_new = dir.file("q_new.npy", random_matrix(5, 4, rng));
    const std::string out = dir.at("out"), log = dir.at("shim.log");
    const auto run_into_out = [&](const std::string& q, const std::string& settings) {
        return run_attn("run --q " + q + " --k " + q + " --v " + q + " --out " + out, settings);
    };
    REQUIRE(run_into_out(q_old, "").status == 0);
    const Matrix output_old = attn::read_matrix(out + "/output.npy"), alpha_old = attn::read_matrix(out + "/attn.npy");
    const std::string watch = "ATTN_SHIM_NO_EXCHANGE=1 ATTN_SHIM_WATCH=" + out + "/output.npy ATTN_SHIM_LOG=" + log;
    for (const std::string links : {"", "ATTN_SHIM_NO_LINK=1"}) {  // hard links, then a copy (vfat)
        INFO("shim: " << watch << " " << links);
        // A failed rename of the second file: both files keep their old contents, nothing is left.
        const RunResult failed = run_into_out(q_new, with_shim(watch + " " + links + " ATTN_SHIM_FAIL_TO=attn.npy"));
        check_refused(failed, "attn.npy: cannot rename into place: Permission denied");
        CHECK(attn::read_matrix(out + "/output.npy") == output_old);
        CHECK(attn::read_matrix(out + "/attn.npy") == alpha_old);
        CHECK(hidden_files(out).empty());
        // The same run, allowed to finish: replaced, and output.npy was there after every rename.
        const RunResult ran = run_into_out(q_new, with_shim(watch + " " + links));
        CHECK(ran.status == 0);
        CHECK(attn::read_matrix(out + "/output.npy") != output_old);
        CHECK(hidden_files(out).empty());
        CHECK(!std::filesystem::exists(log));  // the shim's record of a missing output.npy
        std::filesystem::remove(log);
        REQUIRE(run_into_out(q_old, "").status == 0);  // the old pair back for the next round
    }
}

// A directory used by path after it was opened, then swapped for a symlink between the temporaries
// and the renames, would send the renames through the link and leave the temporary behind in the
// moved directory. Everything is relative to the locked directory's
// descriptor: the run finishes in the directory it locked and leaves nothing anywhere else.
TEST_CASE("attn run --out: a directory swapped for a symlink mid-run is never written through",
          "[cli][limits][output]") {
    const TempDir dir;
    std::mt19937 rng(43);
    const std::string q = dir.file("q.npy", random_matrix(4, 3, rng)), out = dir.at("out");
    REQUIRE(run_attn("run --q " + q + " --k " + q + " --v " + q + " --out " + out).status == 0);
    const Matrix expected = attn::read_matrix(out + "/output.npy");
    std::filesystem::create_directory(out + ".elsewhere");
    for (const std::string exchange : {"", "ATTN_SHIM_NO_EXCHANGE=1"}) {
        INFO("shim: " << exchange);
        const RunResult r = run_attn("run --q " + q + " --k " + q + " --v " + q + " --out " + out,
                                     with_shim(exchange + " ATTN_SHIM_SWAP_DIR=" + out));
        CHECK(r.status == 0);
        REQUIRE(std::filesystem::is_symlink(out));  // the swap happened
        CHECK(std::filesystem::is_empty(out + ".elsewhere"));
        CHECK(hidden_files(out + ".moved").empty());
        CHECK(attn::read_matrix(out + ".moved/output.npy") == expected);
        CHECK(std::filesystem::exists(out + ".moved/attn.npy"));
        std::filesystem::remove(out);
        std::filesystem::rename(out + ".moved", out);
    }
}

// With --out the results are the files; the status line on standard output only reports them. A
// status line that cannot be written (a full disk, a closed descriptor) must not turn a run whose
// files were replaced into exit 2, which would tell a script to roll back data that is in fact new.
TEST_CASE("attn run --out: the exit status says what happened to the files, not to the status line",
          "[cli][limits][output]") {
    const TempDir dir;
    std::mt19937 rng(44);
    const std::string q = dir.file("q.npy", random_matrix(6, 4, rng)), out = dir.at("out");
    const std::string args = "run --q " + q + " --k " + q + " --v " + q + " --out " + out + " --time";
    for (const std::string redirect : {" >/dev/full", " >&-"}) {
        INFO(redirect);
        std::filesystem::remove_all(out);
        const RunResult r = run_attn(args + redirect);
        CHECK(r.status == 0);
        CHECK_THAT(r.err, StartsWith("attn: warning: ") && Contains(out + "/output.npy") &&
                              Contains("the status line could not be written to standard output"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(attn::read_matrix(out + "/output.npy").rows() == 6);
        CHECK(attn::read_matrix(out + "/attn.npy").rows() == 6);
    }
    // Without --out, standard output is the result: a failed write of it is a failed run.
    check_refused(run_attn("run --q " + q + " --k " + q + " --v " + q + " >/dev/full"), "could not write the output");
}

// A message is read as a C string (what()): a NUL inside it would cut it short ("('1" with no
// closing quote), so it is written as \x00 like every control character.
TEST_CASE("a NUL byte in a CSV value is shown as \\x00, and the message goes on past it", "[cli][limits]") {
    const TempDir dir;
    const std::string q = dir.file("q.npy", Matrix(2, 2, 1.0f));
    const std::string header_like = dir.text("nul.csv", std::string("1\0x,2\n3,4\n", 10));
    const RunResult first = run_attn("run --q " + header_like + " --k " + q + " --v " + q);
    check_refused(first, "nul.csv: line 1, value 1 is not a number: '1\\x00x'");
    const std::string later = dir.text("later.csv", std::string("1,2\n3,\0\n", 8));
    check_refused(run_attn("run --q " + q + " --k " + q + " --v " + later),
                  "later.csv: line 2, value 2 is not a number: '\\x00'");
}

// OMP_THREAD_LIMIT caps every parallel region, and omp_get_max_threads() does not know it: --version
// (and the budget, which uses the same count) must say what a region really gets.
TEST_CASE("attn --version reports the threads a parallel region gets, OMP_THREAD_LIMIT included", "[cli][limits]") {
    if (!attn::build_info().openmp) {
        WARN("no OpenMP in this build: attn --version says so, and there is no thread count to check");
        CHECK_THAT(run_attn("--version").out, Contains("openmp: not built"));
        return;
    }
    CHECK_THAT(run_attn("--version", "OMP_THREAD_LIMIT=1").out, Contains("openmp: 1 thread\n"));
    CHECK_THAT(run_attn("--version", "OMP_NUM_THREADS=4 OMP_THREAD_LIMIT=2").out, Contains("openmp: 2 threads\n"));
    CHECK_THAT(run_attn("--version", "OMP_NUM_THREADS=3").out, Contains("openmp: 3 threads\n"));
}

TEST_CASE("attn run on heads: --max-memory charges every head and the mask before any work; crafted N-D headers",
          "[cli][limits][heads]") {
    const TempDir dir;
    const auto nd = [&](const std::string& name, const Matrix& m, const attn::Shape& shape) {
        attn::write_npy_files({{dir.at(name), &m, shape}});
        return dir.at(name);
    };
    // 8 heads of 512 queries: α is 8 MiB for all of them, the inputs 384 KiB
    const std::string q = nd("q.npy", Matrix(8 * 512, 8, 0.25f), {1, 8, 512, 8});
    const std::string core = "run --q " + q + " --k " + q + " --v " + q + " --max-memory 4M";
    const RunResult refused = run_attn(core + " --out " + dir.at("out"));
    check_refused(refused, "--max-memory limit of 4 MiB");
    CHECK_THAT(refused.err, Contains(q + ", " + q + ", " + q + ": "));
    CHECK(!std::filesystem::exists(dir.at("out")));
    CHECK(run_attn(core + " --backend fused --out " + dir.at("out")).status == 0);  // no α: it fits
    // the backward of every head is charged too: at the least limit the forward fits in, its gradients
    // do not, and the run is refused with nothing written. That limit depends on the kernels' scratch,
    // so on the blocking this CPU's caches give them: found by halving, in steps of 64 KiB (the three
    // gradients alone take 384 KiB). One thread: the kernels' scratch is charged per thread.
    const auto fused = [&](std::size_t kib) {
        return "run --q " + q + " --k " + q + " --v " + q + " --backend fused --max-memory " + std::to_string(kib) +
               "K";
    };
    const auto forward_fits = [&](std::size_t steps) {
        return run_attn(fused(64 * steps) + " --out " + dir.at("forward"), "OMP_NUM_THREADS=1").status == 0;
    };
    std::size_t refused_at = 4, fits_at = 256;  // steps: 256 KiB holds less than the inputs, 16 MiB all
    REQUIRE(!forward_fits(refused_at));
    REQUIRE(forward_fits(fits_at));
    while (fits_at - refused_at > 1) {
        const std::size_t middle = (refused_at + fits_at) / 2;
        (forward_fits(middle) ? fits_at : refused_at) = middle;
    }
    check_refused(
        run_attn(fused(64 * fits_at) + " --grad-output " + q + " --out " + dir.at("grad"), "OMP_NUM_THREADS=1"),
        "more than the --max-memory limit");
    CHECK(!std::filesystem::exists(dir.at("grad")));
    // a mask is charged as it is read, a byte per bool (as floats it would need 8 MiB)
    std::string bits = attn::npy_header({1, 8, 512, 512});
    bits.replace(bits.find("'<f4'"), 5, "'|b1'");
    const std::string mask = dir.text("m.npy", bits + std::string(8 * 512 * 512, '\1'));
    check_refused(
        run_attn("run --q " + q + " --k " + q + " --v " + q + " --max-memory 2M --backend fused --mask " + mask),
        mask +
            ": shape (1, 8, 512, 512) needs 2 MiB on top of 384 KiB already taken, more than the --max-memory "
            "limit of 2 MiB");
    // zero-width heads claiming 2⁴⁸ of them hold no data, and are refused by their width, not allocated
    const std::string huge = nd("h.npy", Matrix(0, 0), {65536, 65536, 65536, 0});
    check_refused(run_attn("run --q " + huge + " --k " + huge + " --v " + huge + " --out " + dir.at("h")), "E = 0");
    CHECK(!std::filesystem::exists(dir.at("h")));
    // a malformed N-D header is refused by the reader, naming the file
    std::string header = attn::npy_header({2, 3, 4});
    header[header.find('(')] = '?';
    const std::string bad = dir.text("bad.npy", header);
    check_refused(run_attn("run --q " + bad + " --k " + q + " --v " + q), "bad.npy: malformed header");
}
