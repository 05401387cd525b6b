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
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char* const kinds[] = {"step ", "steps ", "grad ", "grads ", "naive ", "fast ", "fused ", "decode "};
const fs::path root = fs::path(TESTS_DIR).parent_path();

// What a shell command prints on standard output; it must exit 0.
std::string output_of(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (std::size_t got; (got = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, got);
    REQUIRE(pclose(pipe) == 0);
    return out;
}

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

TEST_CASE("every step line of the chain, forward and backward, carries a formula and its shapes", "[docs]") {
    struct Kind {
        const char* prefix;  // "step" also finds "steps …", "grad" also "grads …"
        const char* file;
        std::size_t count;
    };
    // 1, 2.Q, 2.K, 2.V, 3, 4, 4.mask, 5, 6, 3–6 fused; 6.V, 6.α, 5, 4.mask, 4, 3.Q, 3.K, 2.Q, 2.K, 2.V, 1, 6–3 fused
    for (const Kind kind : {Kind{"step", "attention.cpp", 10}, Kind{"grad", "backward.cpp", 12}}) {
        std::size_t lines = 0;
        for (const auto& [marker, places] : markers_in_code()) {
            if (marker.rfind(kind.prefix, 0) != 0) continue;
            ++lines;
            INFO(places.front());
            CHECK(places.front().find(kind.file) == 0);
            CHECK(places.front().find('=') != std::string::npos);  // a formula
            const std::string& line = places.front();              // and the shapes, "(n×d_k)"
            const std::size_t open = line.find('('), times = line.find("×", open), close = line.find(')', times);
            CHECK((open != std::string::npos && times != std::string::npos && close != std::string::npos));
        }
        CHECK(lines == kind.count);
    }
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
        const std::string drawn = output_of(command);
        CHECK(drawn.size() > 1000);
        CHECK(drawn == read(root / "docs" / (std::string("chain.") + lang + ".svg")));
    }
}

// docs/performance.md is a reference generated from one recorded run: its tables are what
// bench/tools/bench_report.py --page prints from docs/bench.json (./scripts/dev bench --record
// writes both), and so are its many-heads and decoding tables (bench/tools/heads_report.py and
// decode_report.py, from the same file); its recorded run is the only one in docs/, and the page
// stays short.
TEST_CASE("the performance page's tables are generated from the one recorded run beside it", "[docs]") {
    const std::string page = read(root / "docs/performance.md");
    const std::string begin = "<!-- generated by bench/tools/bench_report.py --page",
                      end = "<!-- end of the generated part -->";
    const std::size_t from = page.find(begin), to = page.find(end);
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    const std::string command = "python3 '" + (root / "bench/tools/bench_report.py").string() + "' '" +
                                (root / "docs/bench.json").string() + "' --page";
    const std::string generated = output_of(command);
    CHECK(page.substr(from, to + end.size() + 1 - from) == generated);
    CHECK(generated.find("% of the peak") != std::string::npos);
    // the many-heads and the decoding runs against other engines, from the same file
    // (bench/peers/heads_peers.py and decode_peers.py --into): each part is its report tool's output
    for (const auto& [tool, part] : {std::pair{"heads_report.py", "heads"}, std::pair{"decode_report.py", "decode"}}) {
        INFO(tool);
        const std::string part_begin = std::string("<!-- generated by bench/tools/") + tool + " from docs/bench.json",
                          part_end = std::string("<!-- end of the ") + part + " part -->";
        const std::size_t part_from = page.find(part_begin), part_to = page.find(part_end);
        REQUIRE(part_from != std::string::npos);
        REQUIRE(part_to != std::string::npos);
        const std::string text = page.substr(part_from, part_to - part_from);
        const std::string generated = output_of("python3 '" + (root / "bench/tools" / tool).string() + "' '" +
                                                (root / "docs/bench.json").string() + "'");
        CHECK(generated.size() > 100);
        CHECK(text.substr(text.find("\n\n") + 2) == generated + "\n");
    }
    CHECK(std::count(page.begin(), page.end(), '\n') <= 350);
    std::vector<std::string> recorded;
    for (const auto& entry : fs::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".json") recorded.push_back(entry.path().filename().string());
    CHECK(recorded == std::vector<std::string>{"bench.json"});
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
    for (std::size_t at = text.find(".md"); at != std::string::npos; at = text.find(".md", at + 1)) {
        const std::size_t target = text.rfind("](", at);
        if (target == std::string::npos || text.find_first_of(")\n", target) < at) continue;  // not a link's target
        const std::string page = text.substr(target + 2, at + 3 - target - 2);
        if (page == "lesson-03.md" || page == "lesson-03.zh.md") continue;
        const std::size_t open = text.rfind('[', target);
        const std::string label = text.substr(open + 1, target - open - 1);
        INFO(label << " → " << page);
        CHECK(label.size() >= std::string("（英文）").size());
        CHECK(label.ends_with("（英文）"));
        ++links;
    }
    CHECK(links >= 3);
}

// A learner's path comes first (run, read the formula↔code table, open the page, change a number,
// each step's command on a line of its own), the exercises, then links to the engineer's pages. The
// README stays a front door: every engineer's section is a page of docs/ that the site builds.
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
                                            "## Beyond the lesson"};
    std::size_t at = 0;
    for (const std::string& part : order) {
        INFO(part);
        const std::size_t found = text.find(part, at);
        REQUIRE(found != std::string::npos);
        at = found;
    }
    CHECK_THAT(text, Catch::Contains("apt-get") && Catch::Contains("sudo") && Catch::Contains("-Werror") &&
                         Catch::Contains("--largest"));
    CHECK(std::count(text.begin(), text.end(), '\n') <= 150);
}

TEST_CASE("every engineer's section is a page of docs/ that the README links and the site builds", "[docs]") {
    // page → the headings it must carry (the README links each page for these subjects)
    const std::vector<std::pair<std::string, std::vector<std::string>>> pages = {
        {"using.md",
         {"## Your own matrices", "## Backends", "## The library in C++", "## From Python", "## In a browser"}},
        {"building.md",
         {"## What the build needs", "## One binary, every vector width", "## Other compilers and machines",
          "## Benchmarks", "## The pages and their check", "## CI, and what depends on the machine"}},
        {"heads.md",
         {"## Shapes", "## Grouped-query and multi-query attention", "## Masks", "## A query that no key may attend",
          "## From C++", "## From Python", "## From the command line", "## Where each rule lives"}},
        {"robustness.md", {"## Bad input", "## Nothing lost", "## Edge cases, decided", "## Sanitizers and fuzzing"}},
        {"performance.md", {"## Reproduce"}},
        {"reading-order.md", {"## Rooms"}}};
    const std::string readme = read(root / "README.md"), site = read(root / "docs/site/annotate.py");
    for (const auto& [page, headings] : pages) {
        INFO("docs/" << page);
        CHECK_THAT(readme, Catch::Contains("](docs/" + page + ")"));
        CHECK_THAT(site, Catch::Contains("\"" + page + "\": ("));  // in annotate.py's PAGES: built and checked
        const std::string text = read(root / "docs" / page);
        for (const std::string& heading : headings) {
            INFO(heading);
            CHECK(text.find("\n" + heading) != std::string::npos);
        }
    }
}

namespace {

// The anchor a Markdown viewer gives a heading (GitHub's rule, which docs/site/annotate.py follows):
// lower case; letters, digits, marks, '_' and '-' kept; spaces become '-'; everything else dropped.
// Non-ASCII text is kept except the punctuation and symbol blocks below.
std::string heading_anchor(const std::string& heading) {
    std::string out;
    for (std::size_t k = 0; k < heading.size();) {
        const auto byte = static_cast<unsigned char>(heading[k]);
        if (byte < 0x80) {
            if (std::isalnum(byte) || byte == '_' || byte == '-') out += char(std::tolower(byte));
            else if (byte == ' ') out += '-';
            ++k;
            continue;
        }
        const std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
        char32_t code = byte & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
        for (std::size_t b = 1; b < length && k + b < heading.size(); ++b)
            code = code << 6 | (static_cast<unsigned char>(heading[k + b]) & 0x3F);
        const auto in = [&](char32_t from, char32_t to) { return code >= from && code <= to; };
        const bool latin1_letter_or_number = code == 0xAA || code == 0xB2 || code == 0xB3 || code == 0xB5 ||
                                             code == 0xB9 || code == 0xBA || in(0xBC, 0xBE);
        const bool symbol = (in(0xA0, 0xBF) && !latin1_letter_or_number) || code == 0xD7 || code == 0xF7 ||
                            in(0x2000, 0x206F) || in(0x2190, 0x23FF) || in(0x2500, 0x27BF) ||
                            (in(0x3000, 0x303F) && !in(0x3005, 0x3007)) || in(0xFE30, 0xFE4F) || in(0xFF00, 0xFF0F) ||
                            in(0xFF1A, 0xFF20) || in(0xFF3B, 0xFF40) || in(0xFF5B, 0xFF65);
        if (!symbol) out += heading.substr(k, length);
        k += length;
    }
    return out;
}

struct Heading {
    std::string text;
    std::size_t at;  // where it stands in its file
};

// The headings of a Markdown file ("## …" lines outside code blocks), in order.
std::vector<Heading> headings_of(const std::string& text) {
    std::vector<Heading> found;
    bool fenced = false;
    std::size_t at = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line); at += line.size() + 1) {
        if (line.rfind("```", 0) == 0) fenced = !fenced;
        if (fenced || line.empty() || line[0] != '#') continue;
        const std::size_t start = line.find_first_not_of('#');
        if (start == std::string::npos || start > 6 || line[start] != ' ') continue;
        found.push_back({line.substr(start + 1), at});
    }
    return found;
}

// The anchors a page offers: its headings', each repeated one numbered -1, -2, … as GitHub does, and
// the worked example's, where the page's placeholder for it stands.
std::set<std::string> anchors_of(const std::string& text) {
    std::set<std::string> found;
    std::map<std::string, int> seen;
    for (const Heading& h : headings_of(text)) {
        const std::string anchor = heading_anchor(h.text);
        const int times = seen[anchor]++;
        found.insert(times ? anchor + "-" + std::to_string(times) : anchor);
    }
    if (text.find("\n<!-- worked-example -->") != std::string::npos) found.insert("worked-example");
    return found;
}

// Whether a quoted name is a heading: the whole heading, or its start up to " (", ":" or ",".
bool names_heading(const std::string& name, const std::string& heading) {
    if (heading == name) return true;
    if (heading.rfind(name, 0) != 0) return false;
    const std::string rest = heading.substr(name.size());
    return rest.rfind(" (", 0) == 0 || rest.rfind(":", 0) == 0 || rest.rfind(",", 0) == 0;
}

// What in `text` (the file at `path`) points at nothing: a link to a file that is not there, to an
// anchor its Markdown page lacks, or a "Name" above / below that names no heading on that side.
std::vector<std::string> dangling_references(const fs::path& path, const std::string& text) {
    std::vector<std::string> problems;
    std::string prose;  // the text without code blocks, same length, so positions agree
    {
        bool fenced = false;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("```", 0) == 0) fenced = !fenced;
            prose += (fenced || line.rfind("    ", 0) == 0 ? std::string(line.size(), ' ') : line) + "\n";
        }
    }
    for (std::size_t at = prose.find("]("); at != std::string::npos; at = prose.find("](", at + 1)) {
        const std::size_t end = prose.find(')', at);
        if (end == std::string::npos) break;
        const std::string link = prose.substr(at + 2, end - at - 2);
        if (link.empty() || link.find(' ') != std::string::npos || link.find("://") != std::string::npos) continue;
        const std::size_t hash = link.find('#');
        const std::string file = link.substr(0, hash), anchor = hash == std::string::npos ? "" : link.substr(hash + 1);
        const fs::path target = file.empty() ? path : (path.parent_path() / file).lexically_normal();
        if (!fs::exists(target)) {
            problems.push_back("a link to " + link + ": no such file");
        } else if (!anchor.empty() && target.extension() == ".md" &&
                   !anchors_of(file.empty() ? text : read(target)).count(anchor)) {
            problems.push_back("a link to " + link + ": no such heading");
        }
    }
    const auto headings = headings_of(text);
    for (const char* side : {"\" above", "\" below"}) {
        const bool above = std::string(side) == "\" above";
        for (std::size_t at = prose.find(side); at != std::string::npos; at = prose.find(side, at + 1)) {
            const std::size_t open = prose.rfind('"', at - 1);
            if (open == std::string::npos) continue;
            const std::string name = prose.substr(open + 1, at - open - 1);
            if (name.empty() || name.find('\n') != std::string::npos) continue;
            const bool found = std::any_of(headings.begin(), headings.end(), [&](const Heading& h) {
                return names_heading(name, h.text) && (above ? h.at < open : h.at > open);
            });
            if (!found) problems.push_back("\"" + name + side + ": no such heading" + (above ? " above" : " below"));
        }
    }
    return problems;
}

}  // namespace

TEST_CASE("every reference in the docs leads somewhere: files, headings, anchors, above and below", "[docs]") {
    // the detector itself, on references it must flag and references it must leave alone
    const fs::path readme = root / "README.md";
    const std::string page =
        "# Title\n\n## Quick start (Debian)\n\nsee \"Quick start\" above and \"Layout\" below.\n"
        "[a](docs/lesson-03.md#the-steps) [b](docs/lesson-03.md#no-such-part) [c](nowhere.md)\n"
        "[d](#quick-start-debian) [e](#next) (see \"Next\" above)\n\n## Layout\n";
    CHECK(dangling_references(readme, page) ==
          std::vector<std::string>{"a link to docs/lesson-03.md#no-such-part: no such heading",
                                   "a link to nowhere.md: no such file", "a link to #next: no such heading",
                                   "\"Next\" above: no such heading above"});
    CHECK(heading_anchor("CI, and what depends on the machine") == "ci-and-what-depends-on-the-machine");
    CHECK(heading_anchor("Where $W_Q$ and $W_K$ come from") == "where-w_q-and-w_k-come-from");
    CHECK(heading_anchor("用更低的精度计算：bfloat16") == "用更低的精度计算bfloat16");  // U+FF1A drops out
    std::vector<fs::path> files = {readme};
    for (const auto& entry : fs::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".md") files.push_back(entry.path());
    for (const fs::path& file : files) {
        for (const std::string& problem : dangling_references(file, read(file))) {
            INFO(fs::relative(file, root).string() << ": " << problem);
            CHECK(problem == "");
        }
    }
    CHECK(files.size() >= 8);
}

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `word` stands in `text` at `at` as a whole word (nothing word-like either side).
bool whole_word(const std::string& text, std::size_t at, std::size_t length) {
    return (at == 0 || !word_char(text[at - 1])) && (at + length >= text.size() || !word_char(text[at + length]));
}

// What a line of a tracked file says that a product never says of itself: which session or issue
// produced it, what it used to do, a date, or a particular host (a CPU family number). In the
// kernels' comments also a measured figure: the mechanism and the benchmark that measures it belong
// there, the figures in docs/performance.md, generated from one recorded run. Scanned by hand (GCC
// 12 warns inside <regex> in the sanitizer build).
std::string narration(const std::string& raw, bool kernel_source) {
    std::string line = raw;
    std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const std::string word : {"session", "sessions"})
        for (std::size_t at = line.find(word); at != std::string::npos; at = line.find(word, at + 1))
            if (whole_word(line, at, word.size())) return "names a session";
    for (std::size_t at = line.find("issue"); at != std::string::npos; at = line.find("issue", at + 1)) {
        std::size_t k = at + 5;
        if (k < line.size() && line[k] == 's') ++k;
        if (k < line.size() && line[k] == ' ') ++k;
        if (k < line.size() && line[k] == '#') ++k;
        if ((at == 0 || !word_char(line[at - 1])) && k > at + 5 && k < line.size() && std::isdigit(line[k]))
            return "names an issue";
    }
    const std::string used = std::string("used") + " to";
    for (std::size_t at = line.find(used); at != std::string::npos; at = line.find(used, at + 1)) {
        if (!whole_word(line, at, used.size())) continue;
        std::size_t end = at;  // the word before: "is used to …" says what a thing is for
        while (end > 0 && line[end - 1] == ' ') --end;
        std::size_t start = end;
        while (start > 0 && word_char(line[start - 1])) --start;
        const std::string before = line.substr(start, end - start);
        if (before != "is" && before != "are" && before != "was" && before != "were" && before != "be" &&
            before != "been" && before != "being")
            return "says what the code used to do";
    }
    for (std::size_t at = line.find("20"); at != std::string::npos; at = line.find("20", at + 1)) {
        const auto digits = [&](std::size_t from, std::size_t n) {
            for (std::size_t k = from; k < from + n; ++k)
                if (k >= line.size() || !std::isdigit(static_cast<unsigned char>(line[k]))) return false;
            return true;
        };
        if (whole_word(line, at, 10) && digits(at, 4) && line[at + 4] == '-' && digits(at + 5, 2) &&
            line[at + 7] == '-' && digits(at + 8, 2))
            return "carries a date";
    }
    for (std::size_t at = line.find("family "); at != std::string::npos; at = line.find("family ", at + 1))
        if (at + 7 < line.size() && std::isdigit(static_cast<unsigned char>(line[at + 7]))) return "names a host";
    const std::size_t comment = line.find("//");
    if (!kernel_source || comment == std::string::npos) return "";
    const std::string note = line.substr(comment);
    if (note.find("paired runs") != std::string::npos || note.find("gflop/s") != std::string::npos)
        return "carries a measured figure";
    const std::string times = "×";
    for (std::size_t at = note.find(times); at != std::string::npos; at = note.find(times, at + 1)) {
        const bool after_number = at >= 3 && std::isdigit(static_cast<unsigned char>(note[at - 1])) &&
                                  (note[at - 2] == '.' || std::isdigit(static_cast<unsigned char>(note[at - 2])));
        const std::size_t next = at + times.size();
        const bool ends = next >= note.size() || !std::isalnum(static_cast<unsigned char>(note[next]));
        if (after_number && ends && note.substr(0, at).find_last_of('.') != std::string::npos &&
            note.find_last_of('.', at) > note.find_last_of(' ', at))
            return "carries a measured ratio";
    }
    return "";
}

// The tracked files (git ls-files), or, outside a git checkout, every file but the build folders.
std::vector<fs::path> tracked_files() {
    std::vector<fs::path> files;
    if (FILE* git = popen(("git -C '" + root.string() + "' ls-files 2>/dev/null").c_str(), "r")) {
        char buffer[4096];
        while (std::fgets(buffer, sizeof buffer, git)) {
            std::string name(buffer);
            if (!name.empty() && name.back() == '\n') name.pop_back();
            files.push_back(root / name);
        }
        pclose(git);
    }
    if (!files.empty()) return files;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
        const std::string name = it->path().filename().string();
        if (it->is_directory() && (name.starts_with("build") || name == ".git")) it.disable_recursion_pending();
        else if (it->is_regular_file()) files.push_back(it->path());
    }
    return files;
}

}  // namespace

// The rooms of docs/reading-order.md, as the code's #include lines draw them: each folder → the
// folders of ours it may include (its own included). A front end never includes another.
TEST_CASE("each room includes only the rooms below it, and no front end another", "[docs][rooms]") {
    const std::map<std::string, std::set<std::string>> may_include = {
        {"matrix", {"matrix"}},
        {"io", {"io", "matrix"}},
        {"simd", {"simd", "matrix"}},
        {"attention", {"attention", "simd", "matrix"}},
        {"lesson", {"lesson", "attention", "io", "matrix"}},
        {"cli", {"cli", "lesson", "attention", "io", "matrix"}},
        {"python", {"python", "lesson", "attention", "io", "matrix"}},
        {"web", {"web", "lesson", "attention", "io", "matrix"}}};
    std::set<std::string> folders_seen;
    for (const auto& [folder, allowed] : may_include) {
        for (const auto& entry : fs::directory_iterator(root / folder)) {
            std::istringstream lines(read(entry.path()));
            for (std::string line; std::getline(lines, line);) {
                if (line.rfind("#include \"", 0) != 0) continue;
                const std::size_t slash = line.find('/');
                if (slash == std::string::npos) continue;  // a generated header of the build (simd_isas.hpp)
                const std::string room = line.substr(10, slash - 10);
                folders_seen.insert(room);
                INFO(entry.path().filename().string() << ": " << line);
                CHECK(allowed.count(room) == 1);
            }
        }
    }
    for (const auto& room : folders_seen) {
        INFO(room << " is included but has no entry above");
        CHECK(may_include.count(room) == 1);
    }
    // The targets of the other front ends compile no source of the command line (meson.build).
    const std::string build = read(root / "meson.build");
    for (const std::string target : {"extension_module('_attention_cpp'", "executable('attn_walk'"}) {
        const std::size_t at = build.find(target);
        REQUIRE(at != std::string::npos);
        const std::string sources = build.substr(at, build.find("dependencies", at) - at);
        INFO(sources);
        CHECK(sources.find("'cli/") == std::string::npos);
    }
}

TEST_CASE("every file speaks only of the project: no session, issue, former code, date or host", "[docs][words]") {
    // the detector itself, on lines it must flag and lines it must leave alone
    CHECK(narration("the nineteenth session on this host", false) == "names a session");
    CHECK(narration("as issue 21 words it", false) == "names an issue");
    CHECK(narration("it " + std::string("used") + " to fail", false) == "says what the code used to do");
    CHECK(narration("(BM_softmax_rows, 2026-12-01)", false) == "carries a date");
    CHECK(narration("AMD EPYC family 25", false) == "names a host");
    CHECK(narration("    // fused core 1.02–1.03× (paired runs)", true) == "carries a measured figure");
    CHECK(narration("    // worth 1.016× to the product", true) == "carries a measured ratio");
    CHECK(narration("{\"sessionId\": tab}", false).empty());  // the DevTools protocol's own word
    CHECK(narration("a helper that is " + std::string("used") + " to scale", false).empty());
    CHECK(narration("    // a 6×16 tile, n×m scores, 12×2 batches", true).empty());
    CHECK(narration("    // 1024³ product, shape (3×4)", true).empty());
    std::size_t files = 0;
    for (const fs::path& path : tracked_files()) {
        const std::string relative = fs::relative(path, root).string();
        const std::string extension = path.extension().string();
        if (extension == ".png" || extension == ".npy" || extension == ".json" ||
            relative.starts_with("tests/fuzz/corpus/"))
            continue;  // pictures, matrices, recorded runs and fuzz seeds: data, not words
        if (relative == "tests/test_docs.cpp") continue;  // this file names the words it looks for
        const bool kernel_source =
            (extension == ".cpp" || extension == ".hpp") &&
            (relative.starts_with("simd/") || relative.starts_with("matrix/") || relative.starts_with("attention/") ||
             relative.starts_with("io/") || relative.starts_with("bench/"));
        std::istringstream text(read(path));
        std::size_t number = 0;
        for (std::string line; std::getline(text, line);) {
            ++number;
            const std::string problem = narration(line, kernel_source);
            if (problem.empty()) continue;
            INFO(relative << ":" << number << ": " << line);
            CHECK(problem == "");
        }
        ++files;
    }
    CHECK(files > 100);
}
