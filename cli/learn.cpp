// cli/learn.cpp — `attn learn`: parses, calls attn::learn::train, prints the loss and α at three
// moments, the cell each row should choose marked, with the run's sentences (lesson/sentences.hpp,
// Learning), or writes it as JSON (lesson/json.hpp).
#include "cli/learn.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/args.hpp"
#include "cli/text.hpp"
#include "lesson/json.hpp"
#include "lesson/learn.hpp"
#include "lesson/sentences.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

struct LearnOptions {
    learn::Task task = learn::default_task;
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
        else if (args[i] == "--train-values") o.settings.train_values = true;
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

// L to 4 significant digits, in scientific notation once it is small: 0.1235, 5.813e-08.
std::string loss_text(double L) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", L);
    return buf;
}

using lesson::Learning;

std::string say(Lang l, Learning id, std::initializer_list<std::string> values = {}) {
    return lesson::say(l, id, values);
}

// The smallest and the largest of α's weights on the wanted cells, "0.9712–0.9987".
std::string range_text(const std::vector<float>& weights, Lang l) {
    const auto [lo, hi] = std::minmax_element(weights.begin(), weights.end());
    return say(l, Learning::range, {format_number(*lo, 4), format_number(*hi, 4)});
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
        out << "  " << pad_right(tokens[i], 9) << say(l, Learning::reads_most) << pad_right(tokens[best], 9)
            << say(l, Learning::wanted) << tokens[p.wanted[i]] << (best == p.wanted[i] ? "  ✓" : "  ✗") << "\n";
    }
    return out.str();
}

// What is trained, the sizes, and why L falls: the story the run then shows.
std::string story(const LearnOptions& o, const learn::Problem& p) {
    const Lang l = o.lang;
    const auto names = learn::trained_weights(o.settings);
    return "  " +
           say(l, o.task == learn::Task::sentence ? Learning::sizes_sentence : Learning::sizes_retrieval,
               {std::to_string(p.X.rows()), std::to_string(p.X.cols()), std::to_string(p.d_k),
                std::to_string(p.W_V.cols())}) +
           "\n  " +
           (names.size() == 2 ? say(l, Learning::trained_two, {names[0], names[1]})
                              : say(l, Learning::trained_three, {names[0], names[1], names[2]})) +
           say(l, o.settings.train_values ? Learning::story_values : Learning::story_fixed);
}

// How far α went: its weight on the wanted cells at the end and, when W_V was trained too, the same
// run with W_V fixed beside it, the two means the verdict compares (learn::compare_reach), their
// measured difference against the margin, and how much W_V moved.
std::string outcome(const LearnOptions& o, const learn::Problem& p, const learn::Run& run) {
    const Lang l = o.lang;
    const std::vector<float> reached = learn::wanted_weights(run.alpha_end, p);
    std::ostringstream out;
    out << "  " << say(l, Learning::reached, {range_text(reached, l)}) << "\n";
    if (!o.settings.train_values) return out.str();
    learn::Settings fixed = o.settings;
    fixed.train_values = false;
    const Matrix alpha_alone = learn::train(p, fixed).alpha_end;
    const double mean_shared = learn::mean_wanted_weight(run.alpha_end, p),
                 mean_alone = learn::mean_wanted_weight(alpha_alone, p);
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100 * learn::values_moved(p, run));
    const Learning verdict[] = {Learning::moved_less, Learning::moved_as_far, Learning::moved_further};
    out << "  " << say(l, Learning::with_fixed, {range_text(learn::wanted_weights(alpha_alone, p), l)}) << "\n  "
        << say(l, Learning::means, {format_number(float(mean_shared), 4), format_number(float(mean_alone), 4)})
        << "\n  "
        << say(l, verdict[int(learn::compare_reach(mean_shared, mean_alone))],
               {format_number(float(std::abs(mean_shared - mean_alone)), 4),
                shortest_decimal(float(learn::reach_margin)), percent})
        << "\n";
    return out.str();
}

std::string text(const LearnOptions& o, const learn::Problem& p, const learn::Run& run) {
    const Lang l = o.lang;
    const std::vector<std::string> tokens = token_names(o.task, p.X.rows(), l);
    std::ostringstream out;
    out << say(l, o.task == learn::Task::sentence ? Learning::title_sentence : Learning::title_retrieval) << "\n"
        << story(o, p) << "\n  "
        << say(l, Learning::settings,
               {std::to_string(o.settings.steps), shortest_decimal(o.settings.learning_rate),
                std::to_string(o.settings.seed), to_string(o.settings.backend)})
        << "\n\n"
        << say(l, Learning::alpha_start) << "\n"
        << alpha_text(run.alpha_start, p, tokens, l) << "\n"
        << say(l, Learning::loss) << "\n";
    const std::size_t every = std::max<std::size_t>(1, o.settings.steps / 10);
    for (std::size_t step = 0; step < run.loss.size(); ++step)
        if (step % every == 0 || step + 1 == run.loss.size())
            out << "  " << say(l, Learning::step, {std::to_string(step)}) << "  L = " << loss_text(run.loss[step])
                << "\n";
    out << "\n"
        << say(l, Learning::alpha_middle, {std::to_string(run.middle_step)}) << "\n"
        << alpha_text(run.alpha_middle, p, tokens, l) << "\n"
        << say(l, Learning::alpha_end, {std::to_string(run.loss.size() - 1)}) << "\n"
        << alpha_text(run.alpha_end, p, tokens, l) << "\n  "
        << say(l, Learning::fell, {loss_text(run.loss.front()), loss_text(run.loss.back())}) << "\n"
        << outcome(o, p, run);
    return out.str();
}

// The help text, with the defaults read from learn::Settings{}: one place says what they are.
std::string help(Lang l) {
    const learn::Settings defaults;
    std::ostringstream out;
    out << tr(l,
              "Usage: attn learn [options]\n\n"
              "Trains W_Q and W_K (W_V stays fixed unless --train-values) on a task whose right attention is known,\n"
              "with the gradients of the backward pass, and prints the loss and α at the start, half-way and at\n"
              "the end.\n\n"
              "Options:\n"
              "  --task sentence|retrieval  the lesson's 猫 坐 地毯 (猫 reads 坐, 坐 reads 猫, 地毯 reads 坐; d_model "
              "= 4,\n"
              "                             d_k = d_v = 3; default), or 8 random tokens, each to find the partner a\n"
              "                             shuffle gave it (d_model = d_k = d_v = 8)\n"
              "  --train-values             train W_V too: the values then move toward the targets and take up part\n"
              "                             of the error, so α need not move as far\n"
              "  --steps N                  training steps (default ",
              "用法：attn learn [选项]\n\n"
              "在一个已知正确注意力分布的任务上，用反向传播的梯度训练 W_Q 和 W_K（除非给出 --train-values，W_V "
              "保持不变），\n"
              "打印损失，以及开始、训练到一半和结束时的 α。\n\n"
              "选项：\n"
              "  --task sentence|retrieval  课程中的句子“猫 坐 地毯”（猫关注坐、坐关注猫、地毯关注坐；d_model = 4，\n"
              "                             d_k = d_v = 3；默认），或 8 "
              "个随机的词，每个词要找到随机打乱后分给它的搭档\n"
              "                             （d_model = d_k = d_v = 8）\n"
              "  --train-values             同时训练 W_V：Value 会向目标移动并吸收一部分误差，α 就不必移动那么远\n"
              "  --steps N                  训练步数（默认 ")
        << defaults.steps
        << tr(l, ")\n  --lr X                     Adam's step size, in (0, 1] (default ",
              "）\n  --lr X                     学习率（Adam 的步长），取值范围 (0, 1]（默认 ")
        << shortest_decimal(defaults.learning_rate)
        << tr(l, ")\n  --seed N                   the initial weights, and the retrieval task (default ",
              "）\n  --seed N                   初始权重与 retrieval 任务的随机种子（默认 ")
        << defaults.seed
        << tr(l, ")\n  --backend naive|simd|parallel   (default ", "）\n  --backend naive|simd|parallel   （默认 ")
        << to_string(defaults.backend)
        << tr(l,
              ")\n  --lang en|zh               language (default: from LANG)\n"
              "  --format text|json         json: the loss at every step and the three α, for programs\n"
              "  -h, --help                 this text\n",
              "）\n  --lang en|zh               语言（默认取自 LANG）\n"
              "  --format text|json         json：每一步的损失和三个 α，供程序读取\n"
              "  -h, --help                 显示本帮助\n");
    return out.str();
}

}  // namespace

int learn_command(std::span<const std::string> args) {
    const LearnOptions o = parse(args);
    if (o.help) {
        std::cout << help(o.lang);
        return 0;
    }
    const learn::Problem problem = learn::make_problem(o.task, o.settings.seed);
    const learn::Run run = learn::train(problem, o.settings);
    std::cout << (o.json ? lesson::learn_run_json(o.task, o.settings, problem, run,
                                                  token_names(o.task, problem.X.rows(), o.lang))
                         : text(o, problem, run));
    return 0;
}

}  // namespace attn::cli
