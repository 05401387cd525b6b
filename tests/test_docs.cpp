// The docs cannot drift from the code: every marker docs/lesson-03*.md names exists exactly once in
// the code, every marker in the code is named by both docs, and every step line carries its shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char* const kinds[] = {"step ", "steps ", "naive ", "fast ", "fused "};
const fs::path root = fs::path(TESTS_DIR).parent_path();

std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Markers are "[step 3]", "[naive matmul]", …: a bracket, one of these words and a space, a name
// without brackets, a closing bracket. In the docs they are written as code: `[step 3]`.
// (Scanned by hand: GCC 12 warns inside <regex> in the sanitizer build.)
std::vector<std::string> find_markers(const std::string& text, bool in_backticks) {
    std::vector<std::string> found;
    const std::string open = in_backticks ? "`[" : "[", close = in_backticks ? "]`" : "]";
    for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
        const std::size_t start = at + open.size(), end = text.find(close, start);
        if (end == std::string::npos) break;
        const std::string name = text.substr(start, end - start);
        const bool known =
            std::any_of(std::begin(kinds), std::end(kinds), [&](const char* k) { return name.rfind(k, 0) == 0; });
        if (known && name.find_first_of("[]\n`") == std::string::npos) found.push_back(name);
    }
    return found;
}

// marker → the files (and lines) it stands on, over the annotated sources.
std::map<std::string, std::vector<std::string>> markers_in_code() {
    std::map<std::string, std::vector<std::string>> found;
    for (const char* dir : {"attention", "matrix", "simd"}) {
        for (const auto& entry : fs::directory_iterator(root / dir)) {
            std::istringstream lines(read(entry.path()));
            std::size_t number = 0;
            for (std::string line; std::getline(lines, line);) {
                ++number;
                for (const auto& marker : find_markers(line, false))
                    found[marker].push_back(entry.path().filename().string() + ":" + std::to_string(number) + ": " +
                                            line);
            }
        }
    }
    return found;
}

std::set<std::string> markers_in_doc(const std::string& text) {
    const auto found = find_markers(text, true);
    return {found.begin(), found.end()};
}

}  // namespace

TEST_CASE("every marker the docs name stands exactly once in the code", "[docs]") {
    const auto code = markers_in_code();
    for (const char* doc : {"docs/lesson-03.md", "docs/lesson-03.zh.md"}) {
        const auto named = markers_in_doc(read(root / doc));
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
    const auto en = markers_in_doc(read(root / "docs/lesson-03.md"));
    const auto zh = markers_in_doc(read(root / "docs/lesson-03.zh.md"));
    for (const auto& [marker, places] : markers_in_code()) {
        INFO("[" << marker << "] at " << places.front());
        CHECK(en.count(marker) == 1);
        CHECK(zh.count(marker) == 1);
    }
}

TEST_CASE("every marker link of the docs points at the file that carries the marker", "[docs]") {
    for (const char* doc : {"docs/lesson-03.md", "docs/lesson-03.zh.md"}) {
        const std::string text = read(root / doc);
        std::size_t links = 0;
        // [`[step 3]`](../attention/attention.cpp)
        for (std::size_t at = text.find("[`["); at != std::string::npos; at = text.find("[`[", at + 1)) {
            const std::size_t name_end = text.find("]`](../", at);
            if (name_end == std::string::npos) break;
            const std::string marker = text.substr(at + 3, name_end - at - 3);
            const std::size_t path_start = name_end + 7, path_end = text.find(')', path_start);
            const std::string path = text.substr(path_start, path_end - path_start);
            INFO(doc << ": [" << marker << "] → " << path);
            CHECK(read(root / path).find("[" + marker + "]") != std::string::npos);
            ++links;
        }
        CHECK(links >= 30);
    }
}

TEST_CASE("every step line of the chain carries a formula and its shapes", "[docs]") {
    std::size_t steps = 0;
    for (const auto& [marker, places] : markers_in_code()) {
        if (marker.rfind("step", 0) != 0) continue;  // "step …" and "steps …"
        ++steps;
        INFO(places.front());
        CHECK(places.front().find("attention.cpp") == 0);
        CHECK(places.front().find('=') != std::string::npos);    // a formula
        CHECK(places.front().find("(n×") != std::string::npos);  // and the shapes
    }
    CHECK(steps == 10);  // 1, 2.Q, 2.K, 2.V, 3, 4, 4.mask, 5, 6, and 3–6 fused
}

TEST_CASE("no note of the annotated pages runs a formula into the next sentence", "[docs]") {
    // docs/site/annotate.py joins a comment's lines into one paragraph: a line that ends in a formula
    // ("… = d_k$") followed by a line that starts a sentence ("One call …") reads "= d_k One call".
    // Such a formula must end its sentence with a mark.
    for (const char* dir : {"attention", "matrix", "simd", "io"}) {
        for (const auto& entry : fs::directory_iterator(root / dir)) {
            std::istringstream lines(read(entry.path()));
            std::string previous;
            std::size_t number = 0;
            for (std::string line; std::getline(lines, line); previous = line) {
                ++number;
                const auto comment = [](const std::string& l) {
                    const std::size_t at = l.find_first_not_of(' ');
                    if (at == std::string::npos || l.compare(at, 2, "//") != 0) return std::string();
                    const std::size_t text = l.find_first_not_of(' ', at + 2);
                    return text == std::string::npos ? std::string() : l.substr(text);
                };
                const std::string before = comment(previous), now = comment(line);
                INFO(entry.path().filename().string() << ":" << number << ": " << before << " / " << now);
                CHECK_FALSE((!before.empty() && before.back() == '$' && !now.empty() && std::isupper(now[0])));
            }
        }
    }
}

TEST_CASE("the committed flow diagrams are what docs/site/docs_example.py draws", "[docs]") {
    // docs/chain.en.svg and docs/chain.zh.svg are shown by any Markdown viewer (README, docs/); the
    // pages draw the same picture live. Regenerate: docs/site/docs_example.py --svg en > docs/chain.en.svg
    for (const char* lang : {"en", "zh"}) {
        INFO("docs/chain." << lang << ".svg");
        const std::string command = "python3 '" + (root / "docs/site/docs_example.py").string() + "' --svg " + lang;
        std::string drawn;
        FILE* pipe = popen(command.c_str(), "r");
        REQUIRE(pipe != nullptr);
        char buffer[4096];
        for (std::size_t got; (got = fread(buffer, 1, sizeof buffer, pipe)) > 0;) drawn.append(buffer, got);
        REQUIRE(pclose(pipe) == 0);
        CHECK(drawn.size() > 1000);
        CHECK(drawn == read(root / "docs" / (std::string("chain.") + lang + ".svg")));
    }
}

TEST_CASE("the lesson docs end on the lesson's next question, where the lesson puts it", "[docs]") {
    // The lesson closes by pointing to the next one: why a dot product measures how tokens relate.
    for (const auto& [doc, words, exercises_heading] :
         {std::tuple{"docs/lesson-03.md", "why a dot product", "## The five exercises"},
          std::tuple{"docs/lesson-03.zh.md", "为什么要用点积", "## 五个练习"}}) {
        INFO(doc);
        const std::string text = read(root / doc);
        const std::size_t question = text.find(words), exercises = text.find(exercises_heading),
                          example = text.find("<!-- worked-example -->");
        REQUIRE(exercises != std::string::npos);
        REQUIRE(question != std::string::npos);
        CHECK(exercises < question);
        CHECK(question < example);              // after the exercises, as in the lesson; the pages' example follows
        CHECK(text.rfind("\n## ") < question);  // in no section of its own: the last words before the example
    }
}

TEST_CASE("the Chinese docs say which links lead to English-only pages", "[docs]") {
    // Every page but the two lesson docs is English only: a link to one from Chinese text says （英文）.
    const std::string text = read(root / "docs/lesson-03.zh.md");
    std::size_t links = 0;
    for (const char* target : {"](reading-order.md)", "](performance.md)", "](../README.md)"}) {
        for (std::size_t at = text.find(target); at != std::string::npos; at = text.find(target, at + 1)) {
            const std::size_t open = text.rfind('[', at);
            const std::string label = text.substr(open + 1, at - open - 1);
            INFO(label << target);
            CHECK(label.size() >= std::string("（英文）").size());
            CHECK(label.ends_with("（英文）"));
            ++links;
        }
    }
    CHECK(links >= 2);
}

// A learner's path comes first (run, read the formula↔code table, open the page, change a number,
// each step's command on a line of its own), the engineer's sections after it.
TEST_CASE("the README leads a newcomer: the lesson, the two commands, then what to do next", "[docs]") {
    const std::string text = read(root / "README.md");
    const std::vector<std::string> order = {"Attention 03",
                                            "## Quick start",
                                            "./scripts/dev demo",
                                            "./scripts/dev test",
                                            "The walk\nbegins like this",
                                            "## A learner's path",
                                            "**1. Run it.**",
                                            "**2. Read it beside the lesson.**",
                                            "| lesson | code (attention/attention.cpp) | shape |",
                                            "**3. Open the page.**",
                                            "\n    ./scripts/dev docs ",
                                            "**4. Change a number.**",
                                            "\n    ./scripts/dev wasm ",
                                            "\n    ./scripts/dev docs ",
                                            "## The exercises",
                                            "## For engineers",
                                            "## Your own matrices",
                                            "## Backends",
                                            "## Benchmarks",
                                            "## Robustness",
                                            "## Building elsewhere"};
    std::size_t at = 0;
    for (const std::string& part : order) {
        INFO(part);
        const std::size_t found = text.find(part, at);
        REQUIRE(found != std::string::npos);
        at = found;
    }
    CHECK_THAT(text, Catch::Contains("apt-get") && Catch::Contains("sudo") && Catch::Contains("-Werror") &&
                         Catch::Contains("--largest"));
}
