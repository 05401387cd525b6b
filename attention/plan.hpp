// attention/plan.hpp — the plan of a call: every buffer it will allocate, listed by name before
// anything is, so that a memory budget is charged once, up front (attention/plan.cpp). Internal to
// attention/; attention/run.hpp's plan() gives the same list to any caller.
#pragma once

#include <vector>

#include "attention/shapes.hpp"
#include "matrix/size.hpp"

namespace attn {

// The kernel choice of the call's forward, made once, before the plan counts its scratch: the decode
// kernel (backends::decodes says when), never for a forward whose output has no element (the decode
// kernel would read nothing, so nothing would be checked: the chain's per-head checks read every
// input then).
bool forward_decodes(const Call& call, const Shapes& shapes);

// Every buffer run(call) allocates: the inputs it converts, the stacks of results of every head, and
// every kernel's scratch, times the heads that run at once (the most the call holds at a time). Each
// is charged to `budget`, when given, as it is counted (std::length_error at the first that does not
// fit: nothing has been allocated).
std::vector<Buffer> buffers_of(const Call& call, const Shapes& shapes, bool decodes, MemoryBudget* budget = nullptr);

}  // namespace attn
