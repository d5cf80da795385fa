// What a graph is built for: one training step (forward, backward, update) or one inference
// pass (forward only). A typed enum so that every layer dispatches on it, not on a string.
#pragma once
#include <string>

#include "common/error.hpp"

namespace xpusim {

enum class Task { train, inference };

// Accepts "train" and "inference". Returns false on unknown names.
inline bool parse_task(const std::string& s, Task& out) {
  if (s == "train") out = Task::train;
  else if (s == "inference") out = Task::inference;
  else return false;
  return true;
}

inline const char* task_name(Task t) { return t == Task::inference ? "inference" : "train"; }

// "train|inference" for help texts and error messages.
inline const char* task_choices() { return "train|inference"; }

// parse_task for requests: FieldError("task") on unknown names (the CLI shows it as --task,
// a study at its `task:` key).
inline Task task_from_name(const std::string& s) {
  Task t;
  if (!parse_task(s, t)) throw FieldError("task", "unknown task '" + s + "' (one of " + task_choices() + ")");
  return t;
}

}  // namespace xpusim
