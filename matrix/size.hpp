// matrix/size.hpp — the one place where sizes are multiplied, and the memory budget built on it.
//
// A .npy header can claim any shape: (2³², 0) carries no data at all, yet the score matrix it
// leads to would hold 2⁶⁴ floats, which wraps around to 0 in 64-bit arithmetic. So no size product
// in this project is written as a bare `a * b`: it goes through checked_product, which refuses when
// the product does not fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attn {

// a·b, or std::length_error "<what>: a×b is too large to count" when it overflows 64 bits.
std::uint64_t checked_product(std::uint64_t a, std::uint64_t b, const std::string& what);
// a + b, the same way.
std::uint64_t checked_sum(std::uint64_t a, std::uint64_t b, const std::string& what);

// Bytes of a rows×cols float32 matrix (checked).
std::uint64_t matrix_bytes(std::uint64_t rows, std::uint64_t cols);

// "12 bytes", "3 KiB", "1.75 MiB", "16 GiB": sizes as error messages print them (to a hundredth,
// rounded down: a limit given as 1792K reads 1.75 MiB).
std::string describe_bytes(std::uint64_t bytes);

// A limit on the bytes one run may allocate. Every large buffer is charged before it is allocated,
// so a run that would not fit is refused up front, with the sizes in the message.
class MemoryBudget {
public:
    // `name` is how messages call the limit, e.g. "the --max-memory limit".
    MemoryBudget(std::uint64_t limit, std::string name) : limit_(limit), name_(std::move(name)) {}

    // Adds `bytes` for `what` ("S (65536×65536)"); std::length_error naming it, the total and
    // the limit when the sum goes past the limit.
    void charge(std::uint64_t bytes, const std::string& what);

    std::uint64_t limit() const { return limit_; }
    std::uint64_t used() const { return used_; }
    std::uint64_t left() const { return limit_ - used_; }

    // Every charge so far, in order: what it was for and how many bytes.
    struct Charge {
        std::string what;
        std::uint64_t bytes;
    };
    const std::vector<Charge>& charges() const { return charges_; }

private:
    std::uint64_t limit_;
    std::string name_;
    std::uint64_t used_ = 0;
    std::vector<Charge> charges_;
};

}  // namespace attn
