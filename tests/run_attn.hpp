// tests/run_attn.hpp — run the `attn` program (path in $ATTN_EXE, set by Meson) and capture its output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

struct RunResult {
    int status = -1;  // exit code
    std::string out, err;
};

// The shell words that start `attn`: its path in single quotes, after the emulator in
// $ATTN_WRAPPER when the tests run a cross build (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu").
inline std::string attn_command() {
    const char* path = std::getenv("ATTN_EXE");
    if (!path) throw std::runtime_error("ATTN_EXE is not set (run through meson test)");
    const char* wrapper = std::getenv("ATTN_WRAPPER");
    return std::string(wrapper ? wrapper : "") + (wrapper ? " '" : "'") + path + "'";
}

// `prefix` goes before the program (e.g. "LANG=zh_CN.UTF-8"), `args` after it; both are shell text.
inline RunResult run_attn(const std::string& args, const std::string& prefix = "") {
    char err_path[] = "/tmp/attn-test-stderr-XXXXXX";
    const int fd = mkstemp(err_path);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    const std::string cmd = "env -u LC_ALL -u LC_MESSAGES LANG=C.UTF-8 " + prefix + " " + attn_command() + " " + args +
                            " 2>" + err_path + " </dev/null";
    RunResult r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) throw std::runtime_error("popen failed");
    std::array<char, 4096> buf;
    for (std::size_t got; (got = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) r.out.append(buf.data(), got);
    const int raw = pclose(pipe);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    r.err = ss.str();
    std::remove(err_path);
    return r;
}
