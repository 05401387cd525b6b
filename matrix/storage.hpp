// matrix/storage.hpp — where a Matrix's floats live: aligned memory, and large blocks on huge pages.
//
// Every block starts on a 64-byte boundary (one cache line). Fresh memory costs one page fault per
// page when it is first written: 16384 faults for a 64 MiB output on 4 KiB pages, 32 on 2 MiB ones,
// and on a virtual machine a fault costs microseconds. Blocks below fresh_block_bytes are left to
// the C library, which keeps freed blocks and hands them out again already faulted in (glibc, once
// a block of that size has been freed). From there up glibc maps every block afresh and unmaps it
// when freed, so each call that allocates its results (every call but the *_into ones) would fault
// its output in again, page by page. Those blocks' whole 2 MiB pages are therefore offered to the
// operating system as huge pages (Linux: madvise with MADV_HUGEPAGE, which transparent huge pages
// in "madvise" or "always" mode honour; elsewhere, or with them off, nothing changes). BM_heads at
// L = 4096 and BM_core_fresh at n = 4096 measure it.
//
// Growing a Matrix does not write zeros first (construct below leaves a float as it is): every
// kernel writes each element of its result (Matrix::resize_for_overwrite's contract), so the first
// write to a fresh page is the kernel's own, made by the thread that computes that part.
// This file knows nothing about attention.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace attn {

inline constexpr std::size_t matrix_alignment = 64;  // bytes: one cache line
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
inline constexpr std::size_t fresh_block_bytes = std::size_t{32} << 20;  // glibc's largest reuse threshold

void* allocate_matrix_storage(std::size_t bytes);
void free_matrix_storage(void* p, std::size_t bytes) noexcept;

template <class T>
struct MatrixAllocator {
    using value_type = T;
    MatrixAllocator() = default;
    template <class U>
    MatrixAllocator(const MatrixAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(allocate_matrix_storage(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { free_matrix_storage(p, n * sizeof(T)); }
    // An element made with no value is left as it is (default-initialised), one with a value gets it.
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        if constexpr (sizeof...(Args) == 0) ::new (static_cast<void*>(p)) U;
        else ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
    friend bool operator==(const MatrixAllocator&, const MatrixAllocator&) { return true; }
};

}  // namespace attn
