// matrix/size.cpp — size arithmetic that refuses to overflow, and memory budgets in words.
#include "matrix/size.hpp"

#include <stdexcept>

namespace attn {

std::uint64_t checked_product(std::uint64_t a, std::uint64_t b, const std::string& what) {
    std::uint64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product))
        throw std::length_error(what + ": " + std::to_string(a) + "×" + std::to_string(b) + " is too large to count");
    return product;
}

std::uint64_t checked_sum(std::uint64_t a, std::uint64_t b, const std::string& what) {
    std::uint64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum))
        throw std::length_error(what + ": " + std::to_string(a) + " + " + std::to_string(b) + " is too large to count");
    return sum;
}

std::uint64_t matrix_bytes(std::uint64_t rows, std::uint64_t cols) {
    std::uint64_t count = 0, bytes = 0;
    if (__builtin_mul_overflow(rows, cols, &count) || __builtin_mul_overflow(count, sizeof(float), &bytes))
        throw std::length_error("a matrix of shape " + std::to_string(rows) + "×" + std::to_string(cols) +
                                " is too large to count (more than 2⁶⁴ bytes)");
    return bytes;
}

std::string describe_bytes(std::uint64_t bytes) {
    if (bytes >= (std::uint64_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (std::uint64_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= (std::uint64_t{1} << 10)) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

void MemoryBudget::charge(std::uint64_t bytes, const std::string& what) {
    if (bytes > left())
        throw std::length_error(what + " needs " + describe_bytes(bytes) + " on top of " + describe_bytes(used_) +
                                " already taken, more than " + name_ + " of " + describe_bytes(limit_));
    used_ += bytes;
    charges_.push_back({what, bytes});
}

}  // namespace attn
