// cli/walk_json.cpp — `attn walk --format json`: every intermediate at full precision, for the pages.
#include "cli/walk_json.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "attention/experiments.hpp"

namespace attn::cli {

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

// %.9g prints every float32 exactly enough to read back the same float.
std::string number(float v) {
    if (std::isinf(v)) return v < 0 ? "\"-inf\"" : "\"inf\"";  // JSON has no word for either,
    if (std::isnan(v)) return "\"nan\"";                       // nor for NaN: strings the pages show as such
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", double(v));
    return buf;
}

std::string vector(std::span<const float> v) {
    std::string out = "[";
    for (std::size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + number(v[k]);
    return out + "]";
}

std::string matrix(const Matrix& m) { return json_matrix(m); }

}  // namespace

std::string json_matrix(const Matrix& m) {
    std::string out = "[";
    for (std::size_t i = 0; i < m.rows(); ++i) {
        out += i ? ",\n    [" : "\n    [";
        for (std::size_t j = 0; j < m.cols(); ++j) out += (j ? ", " : "") + number(m(i, j));
        out += "]";
    }
    return out + "]";
}

std::string walk_json(const SingleHeadAttention& layer, const AttentionTrace& t, const AttentionOptions& options,
                      const std::vector<std::string>& tokens, const WalkText* text, const std::string& backward) {
    const Matrix& scaled = options.causal ? t.S_masked : t.S_scaled;  // what the softmax was given
    const Matrix by_column = experiments::softmax_columns(scaled);
    std::ostringstream out;
    out << "{\n  \"scale\": " << json_string(to_string(options.scale))
        << ",\n  \"scale_factor\": " << number(scale_factor(options.scale, t.Q.cols()))
        << ",\n  \"causal\": " << (options.causal ? "true" : "false")
        << ",\n  \"backend\": " << json_string(to_string(options.backend)) << ",\n  \"tokens\": [";
    for (std::size_t i = 0; i < tokens.size(); ++i) out << (i ? ", " : "") << json_string(tokens[i]);
    out << "],\n  \"n\": " << t.X.rows() << ", \"d_model\": " << t.X.cols() << ", \"d_k\": " << t.Q.cols()
        << ", \"d_v\": " << t.V.cols();
    const std::pair<const char*, const Matrix*> steps[] = {{"X", &t.X},
                                                           {"W_Q", &layer.W_Q()},
                                                           {"W_K", &layer.W_K()},
                                                           {"W_V", &layer.W_V()},
                                                           {"Q", &t.Q},
                                                           {"K", &t.K},
                                                           {"V", &t.V},
                                                           {"S", &t.S},
                                                           {"S_scaled", &t.S_scaled},
                                                           {"softmax_input", &scaled},
                                                           {"weights", &t.weights},
                                                           {"output", &t.output}};
    for (const auto& [name, m] : steps) out << ",\n  " << json_string(name) << ": " << matrix(*m);
    // Step 3's remark: Q·K (valid only because n = d_k here); confusion 1: the cosines, and S with
    // W_K = W_Q; confusion 2: the softmax by column.
    const bool square = t.Q.rows() == t.Q.cols() && t.K.rows() == t.Q.cols();
    out << ",\n  \"Q_times_K\": " << (square ? matrix(experiments::scores_without_transpose(t.Q, t.K)) : "null")
        << ",\n  \"cosines\": " << matrix(experiments::cosines(t.Q, t.K))
        << ",\n  \"S_with_W_K_as_W_Q\": " << matrix(experiments::scores_with_weights(t.X, layer.W_Q(), layer.W_Q()))
        << ",\n  \"softmax_by_column\": " << matrix(by_column)
        << ",\n  \"weights_row_sums\": " << vector(experiments::row_sums(t.weights))
        << ",\n  \"by_column_sums\": {\"columns\": " << vector(experiments::column_sums(by_column))
        << ", \"rows\": " << vector(experiments::row_sums(by_column)) << "}";
    // Step 5 written out for row 1 (the last row under the mask: row 1 then sees only itself), and
    // exercise 5 for row 1 (and the last row under the mask), as the walk prints them.
    const std::size_t r = options.causal ? t.X.rows() - 1 : 0;
    const auto w = experiments::softmax_written_out(scaled.row(r));
    out << ",\n  \"softmax_row\": {\"row\": " << r << ", \"max\": " << number(w.max)
        << ", \"exponentials\": " << vector(w.exponentials) << ", \"sum\": " << number(w.sum) << "}"
        << ",\n  \"exercise5\": [";
    const bool last_too = options.causal && t.X.rows() > 1;
    for (const std::size_t row : last_too ? std::vector<std::size_t>{0, t.X.rows() - 1} : std::vector<std::size_t>{0}) {
        const auto e = experiments::output_against_value(t, row);
        out << (row ? ", " : "") << "{\"row\": " << row << ", \"o\": " << vector(e.rows.row(0))
            << ", \"v\": " << vector(e.rows.row(1)) << ", \"difference\": " << vector(e.rows.row(2))
            << ", \"length\": " << number(float(e.distance)) << "}";
    }
    out << "]"
        << ",\n  \"heads\": {\"d_model\": 512, \"h\": 8, \"d_k\": " << experiments::head_width(512, 8) << "}";
    if (text) {
        out << ",\n  \"text\": {";
        for (std::size_t k = 0; k < text->marked().size(); ++k)
            out << (k ? ",\n    " : "\n    ") << json_string(text->marked()[k].first) << ": "
                << json_string(text->marked()[k].second);
        out << "}";
    }
    if (!backward.empty()) out << ",\n  \"backward\": " << backward;
    out << "\n}\n";
    return out.str();
}

}  // namespace attn::cli
