// lesson/sentence_table.hpp — how the files of sentences (lesson/sentences*.cpp) write their tables:
// one entry per identifier, in the identifiers' order, each in English and Chinese, and complete()
// to check that at compile time, so a sentence added to its enum and not to its table (or the other
// way round) stops the build. Internal to lesson/: the sentences' interface is lesson/sentences.hpp.
#pragma once

#include <array>
#include <cstddef>

#include "lesson/language.hpp"

namespace attn::lesson::table {

template <class Id>
struct Words {
    Id id;
    const char* en;
    const char* zh;
};

template <class Id>
struct Keyed {
    Id id;
    const char* key;  // its name in the JSON
    const char* en;
    const char* zh;
};

template <class Id>
struct Named {
    Id id;
    const char* key;  // its name in the JSON
};

template <class Entry, std::size_t N>
consteval bool complete(const std::array<Entry, N>& table) {
    for (std::size_t k = 0; k < N; ++k) {
        const Entry& e = table[k];
        if (static_cast<std::size_t>(e.id) != k) return false;
        if constexpr (requires { e.en; })
            if (!e.en || !e.zh) return false;
        if constexpr (requires { e.key; })
            if (!e.key) return false;
    }
    return true;
}

template <class Id>
using KeyedTable = std::array<Keyed<Id>, static_cast<std::size_t>(Id::count)>;
template <class Id>
using Table = std::array<Words<Id>, static_cast<std::size_t>(Id::count)>;
template <class Id>
using Names = std::array<Named<Id>, static_cast<std::size_t>(Id::count)>;

template <class Entry, std::size_t N, class Id>
const Entry& entry(const std::array<Entry, N>& table, Id id) {
    return table[static_cast<std::size_t>(id)];
}

template <class Entry>
const char* in(Lang lang, const Entry& e) {
    return tr(lang, e.en, e.zh);
}

}  // namespace attn::lesson::table
