// Loading the zoo's model YAML files (see catalog.hpp).
#include "models/zoo/catalog.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/config_paths.hpp"
#include "common/error.hpp"

namespace xpusim {

namespace fs = std::filesystem;

ModelSpec load_model_spec(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  SpecReader r(root, path);
  ModelSpec s;
  s.file = path;
  s.name = r.text("name", std::nullopt, "model name, as a request's model field gives it");
  s.description = r.text("description", std::string(""), "one line for `xpusim models`");
  s.family = r.text("family", std::nullopt, "builder family in models/zoo/");
  s.dataset = r.text("dataset", std::nullopt, "dataset it trains on (key of configs/datasets.yaml)");
  s.task = r.text("task", std::string("image"), "input kind", {"image", "sequence"}) == "image" ? ModelTask::image
                                                                                               : ModelTask::sequence;
  for (long long v : r.integers("input", std::nullopt, "[C,H,W] px or [T] tokens", "shape of one sample"))
    s.input.push_back(static_cast<int64_t>(v));
  for (auto v : s.input)
    if (v <= 0 || v > 2147483647) r.fail("input", "dimensions must be in [1, 2147483647]");
  if (s.task == ModelTask::image && s.input.size() != 3) r.fail("input", "an image model needs [C, H, W]");
  if (s.task == ModelTask::sequence && s.input.size() != 1) r.fail("input", "a sequence model needs [T]");
  s.features = r.integer("features", 0, "features", "sequence models: width of float inputs per step (0 = token ids)",
                         [](long long v) { return v >= 0 && v <= 2147483647 ? "" : "must be in [0, 2147483647]"; });
  s.classes = r.integer("classes", std::nullopt, "classes", "output classes (1 = binary, sigmoid)",
                        [](long long v) { return v > 0 && v <= 2147483647 ? "" : "must be in [1, 2147483647]"; });
  if (r.has("reference_params"))
    s.reference_params = r.integer("reference_params", 0, "parameters", "count in the reference implementation");
  else
    r.integer("reference_params", 0, "parameters", "count in the reference implementation");
  s.reference_source = r.text("reference_source", std::string(""), "where reference_params comes from");
  s.optimizer = r.text("optimizer", std::string("sgd_momentum"), "optimizer of the reference recipe",
                       {"sgd_momentum", "adam"});
  YAML::Node params = r.child("params", "family-specific parameters");
  r.finish();

  const auto& fams = model_families();
  auto it = std::find_if(fams.begin(), fams.end(), [&](const FamilyEntry& f) { return f.name == s.family; });
  if (it == fams.end()) {
    std::string list;
    for (const auto& f : fams) list += (list.empty() ? "" : ", ") + f.name;
    r.fail("family", "unknown family '" + s.family + "' (known: " + list + ")");
  }
  // An image family reads [C, H, W] and a sequence family [T]: the other kind of input
  // would be read out of its bounds (found by the model_yaml fuzzer: family vgg, task sequence).
  if (it->task && *it->task != s.task) {
    const bool image = *it->task == ModelTask::image;
    const std::string wanted = image ? "image" : "sequence";
    r.fail(r.has("task") ? "task" : "family", "the " + s.family + " family builds " + wanted +
                                                   " models: task must be " + wanted +
                                                   (image ? " (input [C, H, W])" : " (input [T])"));
  }
  SpecReader pr(params ? params : YAML::Node(YAML::NodeType::Map), path, "params");
  s.build = it->parse(pr, s);
  pr.finish();
  if (it->token_throughput && s.task == ModelTask::sequence) s.tokens_per_sample = s.input[0];
  return s;
}

std::vector<ModelSpec> load_zoo() {
  std::vector<std::string> files;
  fs::path dir = fs::path(config_dir()) / "models";
  if (!fs::is_directory(dir)) throw FieldError("config_dir", dir.string() + ": model directory not found");
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<ModelSpec> out;
  for (const auto& f : files) out.push_back(load_model_spec(f));
  return out;
}

}  // namespace xpusim
