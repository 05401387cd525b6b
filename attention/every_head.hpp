// attention/every_head.hpp — the last steps of the one path (attention/run.cpp): every head of a call,
// each checked and computed on the thread that runs it (attention/every_head.cpp). Internal to
// attention/.
#pragma once

#include "attention/call.hpp"
#include "attention/inputs.hpp"

namespace attn {

// The forward of every head into r.output, and r.weights (materialised backends) or r.log_sum_exp
// (fused, with keep_for_backward): by the decode kernel when `decodes`, which reads each key/value
// head once for its whole group, else one head at a time by the chain (attention/chain.hpp).
void forward_every_head(const HeadsView& Q, const CacheView& K, const CacheView& V, const Shapes& shapes,
                        const AttentionOptions& run, bool decodes, Results& r);

// The backward of every head into r.dQ, r.dK and r.dV, from the forward's results: one key/value head
// and its G query heads at a time, a shared key/value head receiving the sum of their gradients.
void backward_every_head(const HeadsView& Q, const HeadsView& K, const HeadsView& V, const HeadsView& O,
                         const HeadsView& weights, const HeadsView& log_sum_exp, const HeadsView& dO,
                         const Shapes& shapes, const AttentionOptions& run, Results& r);

// The values no head reads, when a call has no query head (H = 0, or B = 0): each key and value
// still checked, as every other call checks them.
void check_unread_values(const CacheView& K, const CacheView& V, const Shapes& shapes, const AttentionOptions& run);

}  // namespace attn
