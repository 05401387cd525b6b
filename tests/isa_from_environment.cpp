// tests/isa_from_environment.cpp — linked into every test program that runs the kernels: says which
// instruction set's kernels the run uses, and skips the whole program (exit status 77, which meson
// reports as SKIP) when the environment asks, through ATTN_ISA, for one this CPU cannot run.
// tests/meson.build runs those programs once per instruction set the build compiled.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>

#include "simd/simd.hpp"

namespace {

struct InstructionSetOfTheRun : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testRunStarting(const Catch::TestRunInfo&) override {
        const char* asked = std::getenv("ATTN_ISA");
        const auto supported = attn::simd::supported_isas();
        if (asked && *asked && std::find(supported.begin(), supported.end(), asked) == supported.end()) {
            std::cout << "SKIP: ATTN_ISA=" << asked << ": this CPU does not run it (it runs:";
            for (const std::string& isa : supported) std::cout << ' ' << isa;
            std::cout << ")\n";
            std::exit(77);
        }
        std::cout << "kernels: " << attn::simd::isa() << " (" << attn::simd::batch_width() << " floats per batch)\n";
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(InstructionSetOfTheRun)
