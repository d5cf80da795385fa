#include "models/zoo.hpp"
#include "models/zoo_seq_len.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "models/inference.hpp"
#include "models/work.hpp"

namespace xpusim {

namespace fs = std::filesystem;

ModelSpec load_model_spec(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  SpecReader r(root, path);
  ModelSpec s;
  s.file = path;
  s.name = r.text("name", std::nullopt, "model name as used by --model");
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
  s.build = it->parse(pr);
  pr.finish();
  if (it->token_throughput && s.task == ModelTask::sequence) s.tokens_per_sample = s.input[0];
  return s;
}

std::vector<ModelSpec> load_zoo() {
  std::vector<std::string> files;
  fs::path dir = fs::path(config_dir()) / "models";
  if (!fs::is_directory(dir)) throw UserError(dir.string() + ": model directory not found (set --config-dir)");
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<ModelSpec> out;
  for (const auto& f : files) out.push_back(load_model_spec(f));
  return out;
}

bool is_token_model(const ModelSpec& spec) {
  for (const auto& f : model_families())
    if (f.name == spec.family) return f.token_throughput && spec.task == ModelTask::sequence;
  return false;
}

void apply_seq_len(ModelSpec& spec, int64_t seq_len) {
  if (seq_len <= 0) throw FieldError("seq_len", "must be > 0, got " + std::to_string(seq_len));
  if (!is_token_model(spec) || spec.input.empty())
    throw FieldError("seq_len", "model '" + spec.name + "' is not a Transformer (family " +
                                    (spec.family.empty() ? std::string("none") : spec.family) +
                                    "): a sequence length applies to Transformer models only");
  spec.input[0] = seq_len;
  spec.tokens_per_sample = seq_len;
}

ModelSpec find_model(const std::string& name_or_path, const OnnxImportOptions& onnx) {
  if (is_onnx_path(name_or_path)) return load_onnx_model(name_or_path, onnx);
  if (!onnx.input_shapes.empty())
    throw FieldError("input_shape", "applies to ONNX models only ('" + name_or_path + "' is not an .onnx file)");
  return load_model_spec(find_config_file("models", name_or_path, "model", "model"));
}

OpGraph build_graph(const ModelSpec& spec, const GraphOptions& o) {
  if (o.batch <= 0) throw FieldError("batch", "must be > 0");
  OpGraph g;
  g.model_name = spec.name;
  ModelBuilder b(g, o.batch, o.precision);
  try {
    try {
      spec.build(b, spec);
    } catch (const InternalError& e) {
      // A family's shape checks fire on parameters from the model file (an input too small
      // for the strides, widths that do not divide): the file's error, not a bug.
      throw UserError(spec.file + ": params: the model's layers do not fit its input: " + e.what());
    }
    // A training step has about three times the forward ops (backward, updates): refuse
    // before lowering what would pass the limit, instead of building two thirds of it first.
    if (o.task != Task::inference && o.training && g.num_ops() > kMaxGraphOps / 3)
      throw GraphTooLarge("the forward graph has " + std::to_string(g.num_ops()) + " ops, over a third of " +
                          std::to_string(kMaxGraphOps) + " (xpusim's limit for a training step, about three times " +
                          "the forward ops; the largest zoo training step has under 2,000)");
    if (o.task == Task::inference)
      g = lower_to_inference(g);
    else if (o.training)
      lower_to_training_step(g, o.training_options);
  } catch (const GraphTooLarge& e) {
    throw UserError(spec.file + ": params: " + e.what());
  }
  count_all_work(g);
  return g;
}

}  // namespace xpusim
