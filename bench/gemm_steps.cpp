// bench/gemm_steps.cpp — step 3 of the GEMM story (i-k-j with a vector axpy), for bench/ to time.
#include "bench/gemm_steps.hpp"

#include <algorithm>

#include "simd/simd.hpp"

namespace bench {

void matmul_ikj_simd(const attn::Matrix& A, const attn::Matrix& B, attn::Matrix& C) {
    C.resize_for_overwrite(A.rows(), B.cols());
    std::fill(C.data(), C.data() + C.size(), 0.0f);
    for (std::size_t i = 0; i < A.rows(); ++i)
        for (std::size_t p = 0; p < A.cols(); ++p)
            attn::simd::axpy(A(i, p), B.row(p).data(), C.row(i).data(), B.cols());
}

}  // namespace bench
