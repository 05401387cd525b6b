// Compiled with -fno-tree-vectorize (see meson.build): this is the i-k-j loop as scalar code.
#include "bench/gemm_steps.hpp"

#include <algorithm>

namespace bench {

void matmul_ikj_scalar(const attn::Matrix& A, const attn::Matrix& B, attn::Matrix& C) {
    C.resize_for_overwrite(A.rows(), B.cols());
    std::fill(C.data(), C.data() + C.size(), 0.0f);
    for (std::size_t i = 0; i < A.rows(); ++i) {
        for (std::size_t p = 0; p < A.cols(); ++p) {
            const float a = A(i, p);
            for (std::size_t j = 0; j < B.cols(); ++j) C(i, j) += a * B(p, j);  // rows of B and C, in order
        }
    }
}

}  // namespace bench
