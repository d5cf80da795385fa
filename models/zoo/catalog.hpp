// The model zoo: configs/models/<name>.yaml files, each naming a builder family (C++ in
// models/zoo/) and that family's parameters. A new model of an existing family is one
// YAML file; a new family is one file in models/zoo/ plus one line in models/zoo/families.cpp.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace xpusim {

struct FamilyEntry {
  std::string name;
  std::string description;
  // The kind of sample the family's builder reads (image families index input[0..2]); empty:
  // either, as the layers say (sequential). load_model_spec rejects a file whose task differs.
  std::optional<ModelTask> task;
  FamilyParser parse;
  // Whether a sample is a sequence whose every token is a unit of work (Transformers):
  // its models report throughput in tokens as well as in samples (sequences).
  bool token_throughput = false;
};
const std::vector<FamilyEntry>& model_families();

// Loads and validates one model YAML.
ModelSpec load_model_spec(const std::string& path);

// Every model in configs/models/, sorted by name.
std::vector<ModelSpec> load_zoo();
}  // namespace xpusim
