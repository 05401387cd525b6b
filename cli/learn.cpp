// cli/learn.cpp — `attn learn`: parses, calls attn::learn::train, prints (or writes as JSON) the loss
// and α at three moments, the cell each row should choose marked.
#include "cli/learn.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "attention/learn.hpp"
#include "cli/args.hpp"
#include "cli/text.hpp"
#include "cli/walk_json.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

struct LearnOptions {
    learn::Task task = learn::Task::sentence;
    learn::Settings settings;
    Lang lang = lang_from_environment();
    bool json = false, help = false;
};

std::size_t parse_count(const std::string& v, const char* option, std::size_t most) {
    const std::size_t digits = v.find_first_not_of("0123456789");
    if (v.empty() || digits != std::string::npos || v.size() > 9 || std::stoul(v) == 0 || std::stoul(v) > most)
        throw UsageError("learn: " + std::string(option) + " takes a whole number from 1 to " + std::to_string(most) +
                         ", got '" + v + "'");
    return std::stoul(v);
}

float parse_rate(const std::string& v) {
    char* end = nullptr;
    const float rate = std::strtof(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(rate > 0.0f) || rate > 1.0f)
        throw UsageError("learn: --lr takes a number in (0, 1], got '" + v + "'");
    return rate;
}

LearnOptions parse(std::span<const std::string> args) {
    LearnOptions o;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < args.size(); ++i) {
        reject_repeated(seen, args[i], "learn");
        std::string v;
        if (args[i] == "-h" || args[i] == "--help") o.help = true;
        else if (option_value(args, i, "--task", v, "learn")) {
            if (v != "sentence" && v != "retrieval")
                throw UsageError("learn: --task must be sentence or retrieval, got '" + v + "'");
            o.task = v == "sentence" ? learn::Task::sentence : learn::Task::retrieval;
        } else if (option_value(args, i, "--steps", v, "learn")) o.settings.steps = parse_count(v, "--steps", 100000);
        else if (option_value(args, i, "--lr", v, "learn")) o.settings.learning_rate = parse_rate(v);
        else if (option_value(args, i, "--seed", v, "learn"))
            o.settings.seed = std::uint32_t(parse_count(v, "--seed", 999999999));
        else if (option_value(args, i, "--backend", v, "learn")) o.settings.backend = parse_backend(v, "learn");
        else if (option_value(args, i, "--lang", v, "learn")) o.lang = parse_lang(v, "learn");
        else if (option_value(args, i, "--format", v, "learn")) {
            if (v != "text" && v != "json") throw UsageError("learn: --format must be text or json, got '" + v + "'");
            o.json = v == "json";
        } else throw UsageError("learn: unknown option '" + args[i] + "' (see attn learn --help)");
    }
    if (o.settings.backend == Backend::fused)
        throw UsageError(
            "learn: the fused backend never forms α, which is what learn shows; use naive, simd or parallel");
    return o;
}

std::vector<std::string> token_names(learn::Task task, std::size_t n, Lang lang) {
    if (task == learn::Task::sentence) return example_tokens(lang);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < n; ++i) names.push_back(std::string("t").append(std::to_string(i + 1)));
    return names;
}

std::string loss_text(double L) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", L);
    return buf;
}

// α with the tokens as labels, then each row's largest weight against the cell the task wants.
std::string alpha_text(const Matrix& alpha, const learn::Problem& p, const std::vector<std::string>& tokens, Lang l) {
    PrintOptions options;
    options.row_labels = options.col_labels = tokens;
    std::ostringstream out;  // streamed: GCC 12 warns falsely on "literal" + std::string chains
    out << format_matrix(alpha, options);
    for (std::size_t i = 0; i < alpha.rows(); ++i) {
        std::size_t best = 0;
        for (std::size_t j = 1; j < alpha.cols(); ++j)
            if (alpha(i, j) > alpha(i, best)) best = j;
        out << "  " << pad_right(tokens[i], 9) << tr(l, "reads most: ", "最关注：") << pad_right(tokens[best], 9)
            << tr(l, "wanted: ", "目标：") << tokens[p.wanted[i]] << (best == p.wanted[i] ? "  ✓" : "  ✗") << "\n";
    }
    return out.str();
}

std::string text(const LearnOptions& o, const learn::Problem& p, const learn::Run& run) {
    const Lang l = o.lang;
    const std::vector<std::string> tokens = token_names(o.task, p.X.rows(), l);
    std::ostringstream out;
    out << tr(l, "Watching attention learn: ", "观察注意力如何学习：")
        << (o.task == learn::Task::sentence ? tr(l, "the lesson's sentence", "课程中的句子")
                                            : tr(l, "finding a partner among 8 tokens", "在 8 个词中找到搭档"))
        << "\n  "
        << tr(l,
              "Token i's target is the embedding of the token it should read. W_V starts as the identity (each "
              "value is its own token's embedding), W_Q and W_K start small (α near uniform), so L = ½‖O − T‖² "
              "falls as row i of α moves its weight there. The three are trained with Adam on the gradients of "
              "attention/backward.cpp; nothing else changes.",
              "第 i 个词的目标是它应当读取的那个词的嵌入。W_V 从单位矩阵开始（每个 Value 就是它自己的词的嵌入），"
              "W_Q、W_K 从很小的值开始（α 接近均匀），所以 α 的第 i 行把权重移到那里，L = ½‖O − T‖² 就随之下降。"
              "这三个矩阵用 Adam 按 attention/backward.cpp 的梯度训练；其余一概不变。")
        << "\n  " << tr(l, "Settings", "设置") << tr(l, ": ", "：") << "steps = " << o.settings.steps
        << ", lr = " << format_number(o.settings.learning_rate, 3) << ", seed = " << o.settings.seed
        << ", backend = " << to_string(o.settings.backend) << "\n\n"
        << tr(l, "α at the start (step 0)", "开始时的 α（第 0 步）") << "\n"
        << alpha_text(run.alpha_start, p, tokens, l) << "\n"
        << tr(l, "Loss", "损失") << "\n";
    const std::size_t every = std::max<std::size_t>(1, o.settings.steps / 10);
    for (std::size_t step = 0; step < run.loss.size(); ++step)
        if (step % every == 0 || step + 1 == run.loss.size())
            out << "  " << tr(l, "step ", "第 ") << step << tr(l, "", " 步") << "  L = " << loss_text(run.loss[step])
                << "\n";
    out << "\n"
        << tr(l, "α half-way (step ", "训练到一半时的 α（第 ") << run.middle_step << tr(l, ")", " 步）") << "\n"
        << alpha_text(run.alpha_middle, p, tokens, l) << "\n"
        << tr(l, "α at the end (step ", "结束时的 α（第 ") << run.loss.size() - 1 << tr(l, ")", " 步）") << "\n"
        << alpha_text(run.alpha_end, p, tokens, l) << "\n  " << tr(l, "L fell from ", "L 从 ")
        << loss_text(run.loss.front()) << tr(l, " to ", " 降到 ") << loss_text(run.loss.back()) << tr(l, ".", "。")
        << "\n";
    return out.str();
}

std::string json(const LearnOptions& o, const learn::Problem& p, const learn::Run& run) {
    std::ostringstream out;
    out << "{\n  \"task\": " << json_string(learn::to_string(o.task)) << ",\n  \"steps\": " << o.settings.steps
        << ",\n  \"lr\": " << loss_text(o.settings.learning_rate) << ",\n  \"seed\": " << o.settings.seed
        << ",\n  \"tokens\": [";
    const auto tokens = token_names(o.task, p.X.rows(), o.lang);
    for (std::size_t i = 0; i < tokens.size(); ++i) out << (i ? ", " : "") << json_string(tokens[i]);
    out << "],\n  \"wanted\": [";
    for (std::size_t i = 0; i < p.wanted.size(); ++i) out << (i ? ", " : "") << p.wanted[i];
    out << "],\n  \"loss\": [";
    for (std::size_t k = 0; k < run.loss.size(); ++k) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", run.loss[k]);
        out << (k ? ", " : "") << buf;
    }
    out << "],\n  \"middle_step\": " << run.middle_step << ",\n  \"alpha_start\": " << json_matrix(run.alpha_start)
        << ",\n  \"alpha_middle\": " << json_matrix(run.alpha_middle)
        << ",\n  \"alpha_end\": " << json_matrix(run.alpha_end) << "\n}\n";
    return out.str();
}

}  // namespace

int learn_command(std::span<const std::string> args) {
    const LearnOptions o = parse(args);
    if (o.help) {
        std::cout << tr(o.lang, R"(Usage: attn learn [options]

Trains W_Q, W_K and W_V (nothing else) on a task whose right attention is known, with the gradients
of the backward pass, and prints the loss and α at the start, half-way and at the end.

Options:
  --task sentence|retrieval  the lesson's 猫 坐 地毯 (猫 reads 坐, 坐 reads 猫, 地毯 reads 坐; default), or
                             8 random tokens, each to find the partner a shuffle gave it
  --steps N                  training steps (default 300)
  --lr X                     Adam's step size, in (0, 1] (default 0.05)
  --seed N                   the initial weights, and the retrieval task (default 1)
  --backend naive|simd|parallel
  --lang en|zh               language (default: from LANG)
  --format text|json         json: the loss at every step and the three α, for programs
  -h, --help                 this text
)",
                        R"(用法：attn learn [选项]

只训练 W_Q、W_K、W_V，任务的正确注意力是已知的；用反向传播的梯度训练，打印损失，以及开始、一半、结束时的 α。

选项：
  --task sentence|retrieval  课程中的「猫 坐 地毯」（猫读坐，坐读猫，地毯读坐；默认），或
                             8 个随机的词，每个词要找到打乱顺序后分给它的搭档
  --steps N                  训练步数（默认 300）
  --lr X                     Adam 的步长，取值 (0, 1]（默认 0.05）
  --seed N                   初始权重与 retrieval 任务的随机种子（默认 1）
  --backend naive|simd|parallel
  --lang en|zh               语言（默认取自 LANG）
  --format text|json         json：每一步的损失和三个 α，供程序读取
  -h, --help                 显示本帮助
)");
        return 0;
    }
    const learn::Problem problem = learn::make_problem(o.task, o.settings.seed);
    const learn::Run run = learn::train(problem, o.settings);
    std::cout << (o.json ? json(o, problem, run) : text(o, problem, run));
    return 0;
}

}  // namespace attn::cli
