// tests/temp_dir.hpp — a fresh directory under /tmp for one test, removed with everything in it.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/io.hpp"

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        static int counter = 0;
        path = std::filesystem::temp_directory_path() /
               ("attn-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(path);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() { std::filesystem::remove_all(path); }

    std::string at(const std::string& name) const { return (path / name).string(); }
    // Writes `m` as name (a .npy file) and returns its path.
    std::string file(const std::string& name, const attn::Matrix& m) const {
        attn::write_npy_files({{at(name), &m}});
        return at(name);
    }
    // Writes `content` as name and returns its path.
    std::string text(const std::string& name, const std::string& content) const {
        std::ofstream(at(name), std::ios::binary) << content;
        return at(name);
    }
    // Names in the directory, sorted: what a test expects to find there, temporaries included.
    std::vector<std::string> listing() const {
        std::vector<std::string> names;
        for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }
};
