// matrix/storage.cpp — a Matrix's memory: 64-byte aligned, and huge pages asked for from 32 MiB up.
#include "matrix/storage.hpp"

#include <cstdint>

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

namespace attn {

void* allocate_matrix_storage(std::size_t bytes) {
    void* p = ::operator new (bytes, std::align_val_t{matrix_alignment});
#ifdef MADV_HUGEPAGE
    // The hint covers the whole 2 MiB pages inside the block, before anything is written there. It
    // may be refused (huge pages off): the block is then as it was, so the result is not checked.
    if (bytes >= fresh_block_bytes) {
        const auto start = reinterpret_cast<std::uintptr_t>(p), end = start + bytes;
        const std::uintptr_t first = (start + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
        const std::uintptr_t last = end / huge_page_bytes * huge_page_bytes;
        if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
    }
#endif
    return p;
}

void free_matrix_storage(void* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{matrix_alignment}); }

}  // namespace attn
