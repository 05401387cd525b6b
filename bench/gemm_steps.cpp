#include "bench/gemm_steps.hpp"

#include <algorithm>
#include <stdexcept>

#include "simd/microkernel.hpp"
#include "simd/simd.hpp"

namespace bench {

void matmul_ikj_simd(const attn::Matrix& A, const attn::Matrix& B, attn::Matrix& C) {
    C.resize_for_overwrite(A.rows(), B.cols());
    std::fill(C.data(), C.data() + C.size(), 0.0f);
    for (std::size_t i = 0; i < A.rows(); ++i)
        for (std::size_t p = 0; p < A.cols(); ++p)
            attn::simd::axpy(A(i, p), B.row(p).data(), C.row(i).data(), B.cols());
}

void matmul_register_tile(const attn::Matrix& A, const attn::Matrix& B, attn::Matrix& C) {
    using attn::simd::MR;
    using attn::simd::NR;
    if (B.cols() % NR != 0) throw std::invalid_argument("matmul_register_tile: width must be a multiple of NR");
    C.resize_for_overwrite(A.rows(), B.cols());
    for (std::size_t i = 0; i < A.rows(); i += MR)
        for (std::size_t j = 0; j < B.cols(); j += NR)
            attn::simd::run_microkernel(std::min(MR, A.rows() - i), A.cols(), A.data() + i * A.cols(), A.cols(),
                                        B.data() + j, B.cols(), C.data() + i * C.cols() + j, C.cols(), NR, true, true,
                                        1.0f);
}

}  // namespace bench
