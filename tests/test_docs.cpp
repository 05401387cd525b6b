// The docs cannot drift from the code: every marker docs/lesson-03*.md names exists exactly once in
// the code, every marker in the code is named by both docs, and every step line carries its shapes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const fs::path root = fs::path(TESTS_DIR).parent_path();

std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::regex code_marker(R"(\[((?:step|steps|naive|fast|fused) [^\]\n]*)\])");
const std::regex doc_marker(R"(`\[((?:step|steps|naive|fast|fused) [^\]`\n]*)\]`)");

// marker → the files (and lines) it stands on, over the annotated sources.
std::map<std::string, std::vector<std::string>> markers_in_code() {
    std::map<std::string, std::vector<std::string>> found;
    for (const char* dir : {"attention", "matrix", "simd"}) {
        for (const auto& entry : fs::directory_iterator(root / dir)) {
            std::istringstream lines(read(entry.path()));
            std::size_t number = 0;
            for (std::string line; std::getline(lines, line);) {
                ++number;
                for (std::sregex_iterator m(line.begin(), line.end(), code_marker), end; m != end; ++m)
                    found[(*m)[1]].push_back(entry.path().filename().string() + ":" + std::to_string(number) + ": " + line);
            }
        }
    }
    return found;
}

std::set<std::string> markers_in(const std::string& text, const std::regex& pattern) {
    std::set<std::string> found;
    for (std::sregex_iterator m(text.begin(), text.end(), pattern), end; m != end; ++m) found.insert((*m)[1]);
    return found;
}

}  // namespace

TEST_CASE("every marker the docs name stands exactly once in the code", "[docs]") {
    const auto code = markers_in_code();
    for (const char* doc : {"docs/lesson-03.md", "docs/lesson-03.zh.md"}) {
        const auto named = markers_in(read(root / doc), doc_marker);
        CHECK(named.size() >= 20);
        for (const auto& marker : named) {
            INFO(doc << " names [" << marker << "]");
            const auto it = code.find(marker);
            REQUIRE(it != code.end());
            INFO("found at " << Catch::Detail::stringify(it->second));
            CHECK(it->second.size() == 1);
        }
    }
}

TEST_CASE("every marker in the code is named by both docs", "[docs]") {
    const auto en = markers_in(read(root / "docs/lesson-03.md"), doc_marker);
    const auto zh = markers_in(read(root / "docs/lesson-03.zh.md"), doc_marker);
    for (const auto& [marker, places] : markers_in_code()) {
        INFO("[" << marker << "] at " << places.front());
        CHECK(en.count(marker) == 1);
        CHECK(zh.count(marker) == 1);
    }
}

TEST_CASE("every step line of the chain carries a formula and its shapes", "[docs]") {
    std::size_t steps = 0;
    for (const auto& [marker, places] : markers_in_code()) {
        if (marker.rfind("step", 0) != 0) continue;  // "step …" and "steps …"
        ++steps;
        INFO(places.front());
        CHECK(places.front().find("attention.cpp") == 0);
        CHECK(places.front().find('=') != std::string::npos);  // a formula
        CHECK(places.front().find("(n×") != std::string::npos);  // and the shapes
    }
    CHECK(steps == 10);  // 1, 2.Q, 2.K, 2.V, 3, 4, 4.mask, 5, 6, and 3–6 fused
}
