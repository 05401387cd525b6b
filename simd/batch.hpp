// simd/batch.hpp — the one vector type of simd/, and the namespace of the instruction set it is for.
//
// The kernels of simd/ are compiled once per instruction set (meson.build: SSE2, AVX2 + FMA + F16C and
// AVX-512 on x86-64, NEON on AArch64), each time with that set's compiler flags and with ATTN_ISA
// naming it, and simd/dispatch.cpp picks one of them when the program starts. So a kernel file puts
// everything it defines in `namespace attn::simd::ATTN_ISA` (attn::simd::avx2, …): the copies never
// meet, and a batch is as wide as the flags of its copy allow — 4 floats with SSE2 or NEON, 8 with
// AVX2, 16 with AVX-512.
#pragma once

#include <cstddef>
#include <new>
#include <vector>
#include <xsimd/xsimd.hpp>

#ifndef ATTN_ISA
#error "simd/batch.hpp belongs to code compiled once per instruction set: define ATTN_ISA (meson.build does)"
#endif

namespace attn::simd::ATTN_ISA {

using Batch = xsimd::batch<float>;
inline constexpr std::size_t W = Batch::size;

// The kernels' scratch buffers: 64-byte aligned floats, with an allocator type of this instruction
// set's own. The vector code the compiler generates for it (resize, …) is then this copy's alone; a
// std::vector of a shared type would be compiled in every copy under the same name, and the linker
// would keep one of them, perhaps the AVX-512 one, for every caller.
template <class T>
struct ScratchAllocator {
    using value_type = T;
    ScratchAllocator() = default;
    template <class U>
    ScratchAllocator(const ScratchAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64})); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{64}); }
    friend bool operator==(const ScratchAllocator&, const ScratchAllocator&) { return true; }
};
using ScratchBuffer = std::vector<float, ScratchAllocator<float>>;

// Grows `buffer` to `floats`, allocating exactly that many (resize alone may allocate up to twice the
// size it grows from): what is charged for a buffer is what it takes (simd/dispatch.cpp's sizes).
inline void grow_exactly(ScratchBuffer& buffer, std::size_t floats) {
    buffer.reserve(floats);
    buffer.resize(floats);
}

}  // namespace attn::simd::ATTN_ISA
