// matrix/size.cpp — size arithmetic that refuses to overflow, and memory budgets in words.
#include "matrix/size.hpp"

#include <cstdio>
#include <stdexcept>
#include <utility>

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
    char text[64];
    for (const auto& [shift, unit] : {std::pair{30, "GiB"}, {20, "MiB"}, {10, "KiB"}}) {
        if (bytes < (std::uint64_t{1} << shift)) continue;
        const std::uint64_t whole = bytes >> shift, hundredths = ((bytes - (whole << shift)) * 100) >> shift;
        std::snprintf(text, sizeof text, "%llu.%02llu", (unsigned long long)whole, (unsigned long long)hundredths);
        std::string number = text;
        while (number.back() == '0') number.pop_back();  // 1.50 → 1.5, 2.00 → 2
        if (number.back() == '.') number.pop_back();
        return number + " " + unit;
    }
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
