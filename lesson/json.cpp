// lesson/json.cpp — the lesson as JSON: every intermediate and demo at full precision, for the pages.
#include "lesson/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "io/io.hpp"
#include "lesson/learn.hpp"
#include "matrix/print.hpp"

namespace attn::lesson {

// The tokens may be a reader's own (the pages' editable example): quotes, backslashes and control
// characters are escaped, everything else (UTF-8 included) is kept as it is.
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

namespace {

// ±∞ and NaN as the strings the pages show as such (JSON has no word for them), or nothing.
const char* unspeakable(double v) {
    if (std::isinf(v)) return v < 0 ? "\"-inf\"" : "\"inf\"";
    if (std::isnan(v)) return "\"nan\"";
    return nullptr;
}

}  // namespace

std::string json_number(float v) {
    if (const char* word = unspeakable(v)) return word;
    return shortest_decimal(v);
}

std::string json_number(double v) {
    if (const char* word = unspeakable(v)) return word;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string json_matrix(const Matrix& m) {
    std::string out = "[";
    for (std::size_t i = 0; i < m.rows(); ++i) {
        out += i ? ",\n    [" : "\n    [";
        for (std::size_t j = 0; j < m.cols(); ++j) out += (j ? ", " : "") + json_number(m(i, j));
        out += "]";
    }
    return out + "]";
}

namespace {

// [a, b, …]: floats at full precision, indices as they are.
std::string json_array(std::span<const float> v) {
    std::string out = "[";
    for (std::size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + json_number(v[k]);
    return out + "]";
}

std::string json_array(const std::vector<std::size_t>& v) {
    std::string out = "[";
    for (std::size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + std::to_string(v[k]);
    return out + "]";
}

void settings(std::ostringstream& out, const ForwardWalk& w, const std::vector<std::string>& tokens) {
    const AttentionTrace& t = w.trace;
    out << "{\n  \"scale\": " << json_string(to_string(w.options.scale))
        << ",\n  \"scale_factor\": " << json_number(scale_factor(w.options.scale, t.Q.cols()))
        << ",\n  \"causal\": " << (w.options.causal ? "true" : "false")
        << ",\n  \"backend\": " << json_string(to_string(w.options.backend)) << ",\n  \"tokens\": [";
    for (std::size_t i = 0; i < tokens.size(); ++i) out << (i ? ", " : "") << json_string(tokens[i]);
    out << "],\n  \"n\": " << t.X.rows() << ", \"d_model\": " << t.X.cols() << ", \"d_k\": " << t.Q.cols()
        << ", \"d_v\": " << t.V.cols();
}

void matrices(std::ostringstream& out, const ForwardWalk& w) {
    const AttentionTrace& t = w.trace;
    const std::pair<const char*, const Matrix*> steps[] = {{"X", &t.X},
                                                           {"W_Q", &w.W_Q},
                                                           {"W_K", &w.W_K},
                                                           {"W_V", &w.W_V},
                                                           {"Q", &t.Q},
                                                           {"K", &t.K},
                                                           {"V", &t.V},
                                                           {"S", &t.S},
                                                           {"S_scaled", &t.S_scaled},
                                                           {"softmax_input", &w.softmax_input},
                                                           {"weights", &t.weights},
                                                           {"output", &t.output}};
    for (const auto& [name, m] : steps) out << ",\n  " << json_string(name) << ": " << json_matrix(*m);
}

void demos(std::ostringstream& out, const ForwardWalk& w) {
    out << ",\n  \"Q_times_K\": " << (w.Q_times_K ? json_matrix(*w.Q_times_K) : "null")
        << ",\n  \"cosines\": " << json_matrix(w.cosines)
        << ",\n  \"S_with_W_K_as_W_Q\": " << json_matrix(w.S_with_W_K_as_W_Q)
        << ",\n  \"softmax_by_column\": " << json_matrix(w.softmax_by_column)
        << ",\n  \"weights_row_sums\": " << json_array(w.weights_row_sums)
        << ",\n  \"by_column_sums\": {\"columns\": " << json_array(w.by_column_column_sums)
        << ", \"rows\": " << json_array(w.by_column_row_sums) << "}";
    const experiments::SoftmaxWrittenOut& s = w.softmax_row.written_out;
    out << ",\n  \"softmax_row\": {\"row\": " << w.softmax_row.row << ", \"max\": " << json_number(s.max)
        << ", \"exponentials\": " << json_array(s.exponentials) << ", \"sum\": " << json_number(s.sum) << "}"
        << ",\n  \"exercise5\": [";
    for (std::size_t k = 0; k < w.exercise5.size(); ++k) {
        const OutputAgainstValue& e = w.exercise5[k];
        out << (k ? ", " : "") << "{\"row\": " << e.row << ", \"o\": " << json_array(e.table.rows.row(0))
            << ", \"v\": " << json_array(e.table.rows.row(1)) << ", \"difference\": " << json_array(e.table.rows.row(2))
            << ", \"length\": " << json_number(float(e.table.distance)) << "}";
    }
    out << "]"
        << ",\n  \"heads\": {\"d_model\": " << w.heads.d_model << ", \"h\": " << w.heads.h
        << ", \"d_k\": " << w.heads.d_k << "}"
        << ",\n  \"written_out\": {\"column\": " << w.column << ", \"q_norm\": " << json_number(w.q_norm)
        << ", \"k_norm\": " << json_number(w.k_norm) << "}"
        << ",\n  \"largest_per_row\": {\"S\": " << json_array(w.largest_in_S)
        << ", \"S_with_W_K_as_W_Q\": " << json_array(w.largest_with_W_K_as_W_Q) << "}";
}

std::string json_vector(const std::vector<float>& v) { return json_array(std::span<const float>(v)); }

std::ostream& operator<<(std::ostream& out, const OnlineState& s) {
    return out << "{\"m\": " << json_number(s.m) << ", \"l\": " << json_number(s.l) << ", \"o\": " << json_vector(s.o)
               << "}";
}

void json_steps(std::ostream& out, const std::vector<KeyStep>& steps) {
    out << "[";
    for (std::size_t k = 0; k < steps.size(); ++k)
        out << (k ? ",\n      " : "\n      ") << "{\"keys\": " << json_array(steps[k].keys)
            << ", \"scores\": " << json_vector(steps[k].scores) << ", \"m_before\": " << json_number(steps[k].m_before)
            << ", \"rescale\": " << json_number(steps[k].rescale) << ", \"after\": " << steps[k].after
            << ", \"output\": " << json_vector(steps[k].output) << "}";
    out << "]";
}

// Steps 3–6 as the fused kernel does them (lesson/fused_walk.hpp).
void fused(std::ostringstream& out, const FusedWalk& f) {
    const Merge& h = f.halves;
    out << ",\n  \"fused\": {\"row\": " << f.row << ", \"moves\": " << f.moves << ",\n    \"one_at_a_time\": ";
    json_steps(out, f.one_at_a_time);
    out << ",\n    \"in_tiles\": ";
    json_steps(out, f.in_tiles);
    out << ",\n    \"output\": " << json_matrix(f.output)
        << ",\n    \"largest_difference\": " << json_number(f.largest_difference) << ",\n    \"halves\": {\"keys\": ["
        << json_array(h.first_keys) << ", " << json_array(h.second_keys) << "], \"states\": [" << h.first << ", "
        << h.second << "], \"factors\": [" << json_number(h.first_factor) << ", " << json_number(h.second_factor)
        << "],\n      \"merged\": " << h.merged << ", \"output\": " << json_vector(h.output)
        << ", \"largest_difference\": " << json_number(h.largest_difference) << "}}";
}

}  // namespace

std::string walk_json_open(const ForwardWalk& walk, const std::vector<std::string>& tokens) {
    std::ostringstream out;
    settings(out, walk, tokens);
    matrices(out, walk);
    demos(out, walk);
    fused(out, walk.fused);
    return out.str();
}

std::string walk_json(const ForwardWalk& walk, const std::vector<std::string>& tokens) {
    return walk_json_open(walk, tokens) + "\n}\n";
}

std::string learn_defaults_json() {
    const learn::Settings defaults{};
    char out[128];
    std::snprintf(out, sizeof out, "{\"task\": \"%s\", \"steps\": %zu, \"lr\": %s, \"seed\": %u}",
                  learn::to_string(learn::default_task).c_str(), defaults.steps,
                  shortest_decimal(defaults.learning_rate).c_str(), unsigned(defaults.seed));
    return out;
}

namespace {

// A JSON array of `items`, each written by `item`.
template <class List, class Item>
std::string json_list(const List& items, Item item) {
    std::string out = "[";
    for (std::size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + item(items[k]);
    return out + "]";
}

std::string index(std::size_t i) { return std::to_string(i); }

}  // namespace

std::string learn_run_json(learn::Task task, const learn::Settings& settings, const learn::Problem& problem,
                           const learn::Run& run, const std::vector<std::string>& tokens) {
    const auto number = [](auto x) { return json_number(x); };
    std::ostringstream out;
    out << "{\n  \"task\": " << json_string(learn::to_string(task)) << ",\n  \"steps\": " << settings.steps
        << ",\n  \"lr\": " << json_number(settings.learning_rate) << ",\n  \"seed\": " << settings.seed
        << ",\n  \"backend\": " << json_string(to_string(settings.backend))
        << ",\n  \"train_values\": " << (settings.train_values ? "true" : "false")
        << ",\n  \"trained\": " << json_list(learn::trained_weights(settings), json_string)
        << ",\n  \"n\": " << problem.X.rows() << ",\n  \"d_model\": " << problem.X.cols()
        << ",\n  \"d_k\": " << problem.d_k << ",\n  \"d_v\": " << problem.W_V.cols()
        << ",\n  \"tokens\": " << json_list(tokens, json_string)
        << ",\n  \"wanted\": " << json_list(problem.wanted, index) << ",\n  \"loss\": " << json_list(run.loss, number)
        << ",\n  \"middle_step\": " << run.middle_step << ",\n  \"alpha_start\": " << json_matrix(run.alpha_start)
        << ",\n  \"alpha_middle\": " << json_matrix(run.alpha_middle)
        << ",\n  \"alpha_end\": " << json_matrix(run.alpha_end)
        << ",\n  \"alpha_wanted_end\": " << json_list(learn::wanted_weights(run.alpha_end, problem), number)
        << ",\n  \"W_V_end\": " << json_matrix(run.W_V_end) << "\n}\n";
    return out.str();
}

std::string learner_json(const learn::Trainer& trainer, const std::vector<double>& losses) {
    const learn::Problem& p = trainer.problem();
    std::ostringstream out;
    out << "{\"losses\": [";
    for (std::size_t k = 0; k < losses.size(); ++k) out << (k ? ", " : "") << json_number(losses[k]);
    out << "], \"step\": " << trainer.steps_taken() << ", \"loss\": " << json_number(trainer.look().loss)
        << ", \"wanted\": " << json_array(p.wanted) << ", \"X\": " << json_matrix(p.X)
        << ", \"W_Q\": " << json_matrix(trainer.W_Q()) << ", \"W_K\": " << json_matrix(trainer.W_K())
        << ", \"W_V\": " << json_matrix(trainer.W_V()) << "}";
    return out.str();
}

std::string refusal_json(const std::exception& e) {
    const std::string error = "{\"error\": " + json_string(e.what());
    const auto* cell = dynamic_cast<const CellError*>(&e);
    if (!cell) return error + "}\n";
    return error + ", \"cell\": {\"matrix\": " + json_string(cell->file) + ", \"row\": " + std::to_string(cell->row) +
           ", \"column\": " + std::to_string(cell->column) + ", \"problem\": " + json_string(to_string(cell->problem)) +
           ", \"text\": " + json_string(printable(cell->text)) + "}}\n";
}

}  // namespace attn::lesson
