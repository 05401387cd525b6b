// attention/heads.cpp — what a stack of heads is: its shape as messages write it, one head of it,
// one head's part of a mask. The calls on stacks of heads are in attention/calls.cpp.
#include "attention/heads.hpp"

namespace attn {

std::string shape_string(const HeadsShape& s) {
    return std::to_string(s.batch) + "×" + std::to_string(s.heads) + "×" + shape_string(s.rows, s.cols);
}

const Matrix HeadsView::head(std::size_t b, std::size_t h) const {
    return Matrix::borrow(data + (b * shape.heads + h) * shape.rows * shape.cols, shape.rows, shape.cols);
}

ScoreMask ScoreMask::for_head(std::size_t b, std::size_t h) const {
    const std::ptrdiff_t offset = std::ptrdiff_t(b) * batch_stride + std::ptrdiff_t(h) * head_stride;
    const std::size_t element = kind == Kind::boolean ? 1 : sizeof(float);
    ScoreMask head = *this;
    head.data = static_cast<const unsigned char*>(data) + offset * std::ptrdiff_t(element);
    return head;
}

}  // namespace attn
