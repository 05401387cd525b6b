#include "attention/kernels.hpp"

#include "matrix/ops.hpp"

namespace attn::kernels {

void matmul(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    switch (backend) {
        case Backend::naive: return matmul_into(A, B, C);
    }
}

// The naive path does literally what the formula says: build Kᵀ, then multiply.
void matmul_transposed(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    switch (backend) {
        case Backend::naive: check_matmul_transposed_shapes("matmul_transposed", A, B); return matmul_into(A, transpose(B), C);
    }
}

void scale(Matrix& S, float c, Backend backend) {
    switch (backend) {
        case Backend::naive: return scale_in_place(S, c);
    }
}

void causal_mask(Matrix& S, Backend backend) {
    switch (backend) {
        case Backend::naive: return causal_mask_in_place(S);
    }
}

void softmax_rows(Matrix& S, Backend backend) {
    switch (backend) {
        case Backend::naive: return softmax_rows_in_place(S);
    }
}

}  // namespace attn::kernels
