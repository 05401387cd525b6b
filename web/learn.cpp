// web/learn.cpp — `attn learn` a step at a time, for the pages' live worked example: the page
// makes a Learner (the task, the seed and Adam's step size, as `attn learn --task --seed --lr`), asks
// it for a few steps between redraws, and draws the chain for the weights it is handed back with
// walk() (web/walk.cpp). Training is lesson/learn.cpp's Trainer, the one `attn learn` runs: for
// the same seed the page reaches the same weights, up to the last bits of each libm's exp.
#include <emscripten/bind.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include "lesson/learn.hpp"
#include "lesson/json.hpp"

namespace attn::web {

using lesson::json_number;
using lesson::json_string;

namespace {

// A matrix as CSV text that walk() reads back to the same floats: 9 significant digits round-trip.
std::string csv(const Matrix& m) {
    std::ostringstream out;
    char number[32];
    for (std::size_t i = 0; i < m.rows(); ++i)
        for (std::size_t j = 0; j < m.cols(); ++j) {
            std::snprintf(number, sizeof number, "%.9g", double(m(i, j)));
            out << number << (j + 1 < m.cols() ? "," : "\n");
        }
    return out.str();
}

learn::Task task_named(const std::string& name) {
    if (name == "sentence") return learn::Task::sentence;
    if (name == "retrieval") return learn::Task::retrieval;
    throw std::invalid_argument("Learner: the task must be sentence or retrieval, got '" + name + "'");
}

}  // namespace

class Learner {
public:
    Learner(const std::string& task, unsigned seed, float learning_rate)
        : trainer_(learn::make_problem(task_named(task), seed),
                   learn::Settings{.learning_rate = learning_rate, .seed = seed}) {}

    // `count` more steps. JSON: "step" (steps taken so far), "losses" (L before each of these steps),
    // "loss" (L at the weights now), "wanted" (the cell each row of α should choose), and X, W_Q, W_K,
    // W_V as CSV text for walk().
    std::string step(unsigned count) {
        std::ostringstream out;
        out << "{\"losses\": [";
        for (unsigned k = 0; k < count; ++k) out << (k ? ", " : "") << json_number(trainer_.step().loss);
        const learn::Problem& p = trainer_.problem();
        out << "], \"step\": " << trainer_.steps_taken() << ", \"loss\": " << json_number(trainer_.look().loss)
            << ", \"wanted\": [";
        for (std::size_t i = 0; i < p.wanted.size(); ++i) out << (i ? ", " : "") << p.wanted[i];
        out << "], \"X\": " << json_string(csv(p.X)) << ", \"W_Q\": " << json_string(csv(trainer_.W_Q()))
            << ", \"W_K\": " << json_string(csv(trainer_.W_K())) << ", \"W_V\": " << json_string(csv(trainer_.W_V()))
            << "}";
        return out.str();
    }

private:
    learn::Trainer trainer_;
};

}  // namespace attn::web

EMSCRIPTEN_BINDINGS(attention_cpp_learn) {
    emscripten::class_<attn::web::Learner>("Learner").constructor<const std::string&, unsigned, float>().function(
        "step", &attn::web::Learner::step);
    // `attn learn`'s defaults, {"task", "steps", "lr", "seed"}, for the page's controls.
    emscripten::function("learnDefaults", &attn::lesson::learn_defaults_json);
}
