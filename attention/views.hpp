// attention/views.hpp — the C++ entry points' operands as views of a call (attention/call.hpp): a
// Matrix, a stack of heads, a cache, a mask given as a ScoreMask. Each keeps the shape and strides
// its view points at. Internal to attention/, but for MatrixView, which a front end uses for the
// matrices a layer keeps.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

#include "attention/call.hpp"
#include "attention/heads.hpp"

namespace attn {

// A rows×cols matrix of floats.
struct MatrixView {
    std::size_t shape[2];
    View view;
    explicit MatrixView(const Matrix& M) : shape{M.rows(), M.cols()}, view{M.data(), shape} {}
};

// (B, H, rows, cols) heads, of floats or of a cache's type.
struct HeadsAsView {
    std::size_t shape[4];
    View view;
    explicit HeadsAsView(const CacheView& heads)
        : shape{heads.shape.batch, heads.shape.heads, heads.shape.rows, heads.shape.cols},
          view{heads.data,
               shape,
               {},
               heads.type == KvDtype::bf16  ? Element::bf16
               : heads.type == KvDtype::f16 ? Element::f16
                                            : Element::f32} {}
};

// A ScoreMask over the scores of `rank` dimensions: (L, S) for one head, (B, H, L, S) for heads, each
// read through its stride (0 along an axis it repeats).
struct MaskAsView {
    std::size_t shape[4];
    std::ptrdiff_t strides[4];
    View view;
    MaskAsView(const ScoreMask& mask, std::size_t batch, std::size_t heads, std::size_t L, std::size_t S,
               std::size_t rank)
        : shape{batch, heads, L, S},
          strides{mask.batch_stride, mask.head_stride, mask.row_stride, mask.col_stride},
          view{mask.data, std::span<const std::size_t>(shape + 4 - rank, rank),
               std::span<const std::ptrdiff_t>(strides + 4 - rank, rank),
               mask.kind == ScoreMask::Kind::boolean ? Element::boolean : Element::f32} {}
};

// The results a caller hands in to be reused are none of its inputs: the chain would overwrite one
// while it still reads it (std::invalid_argument from `who`, naming it). (attention/calls.cpp)
void refuse_aliases(const std::string& who, std::initializer_list<const Matrix*> results,
                    std::initializer_list<std::pair<std::string, const Matrix*>> inputs);

// The stack of a call's result as the library's heads.
inline Heads heads_of(Result&& result) {
    const std::vector<std::size_t>& s = result.shape;
    if (s.size() != 4) return {};  // a result the call did not form
    return {std::move(result.values), {s[0], s[1], s[2], s[3]}};
}

}  // namespace attn
