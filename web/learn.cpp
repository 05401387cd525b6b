// web/learn.cpp — `attn learn` a step at a time, for the pages' live worked example: the page
// makes a Learner (the task, the seed and Adam's step size, as `attn learn --task --seed --lr`), asks
// it for a few steps between redraws, and draws the chain for the weights it is handed back with
// walk() (web/walk.cpp). Training is lesson/learn.cpp's Trainer, the one `attn learn` runs: for the
// same seed the page reaches the same weights, up to the last bits of each libm's exp. What it
// reports is written by lesson/json.hpp.
#include <emscripten/bind.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "lesson/json.hpp"
#include "lesson/learn.hpp"

namespace attn::web {

namespace {

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

    // `count` more steps, and where they left the weights (lesson::learner_json).
    std::string step(unsigned count) {
        std::vector<double> losses;
        for (unsigned k = 0; k < count; ++k) losses.push_back(trainer_.step().loss);
        return lesson::learner_json(trainer_, losses);
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
