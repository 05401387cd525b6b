// attention/run.hpp — the one path every call takes (attention/run.cpp). Every entry point describes
// its call as a Call (attention/call.hpp): the C++ functions of attention.hpp and heads.hpp, `attn run`
// from its files, the Python module from its arrays. run() then takes each the same way:
//
//   shapes → threads → the kernel choice → plan (every buffer) → one charge → values → the kernels
//
// so that a rule (what a shape must be, how a mask broadcasts, what a 16-bit cache allows, which
// kernel decodes, how many threads a call may use) holds for every front end alike.
#pragma once

#include <vector>

#include "attention/call.hpp"

namespace attn {

// The one path: the call's shapes checked (std::invalid_argument naming the operands and their
// shapes), its threads set for as long as it runs, every buffer it will allocate charged to
// options.budget (std::length_error naming the first that does not fit), its inputs converted and
// their values checked (std::invalid_argument, or std::overflow_error for a range no backend could
// promise), then the kernels. A refused call computes nothing. The matrices of `results` are reused
// where they have room.
void run(const Call& call, Results& results);

// run(call, results) for a caller that lent its own buffers to `results`: give_back() hands them back
// to it, filled, or as they were when the call is refused.
template <class GiveBack>
void run_lending(const Call& call, Results& results, GiveBack give_back) {
    try {
        run(call, results);
    } catch (...) {
        give_back();
        throw;
    }
    give_back();
}

// What run(call) would allocate, buffer by buffer, as it charges it: for a caller that wants to know
// before it runs (the fuzzers). The shapes are checked as run() checks them.
std::vector<Buffer> plan(const Call& call);

}  // namespace attn
