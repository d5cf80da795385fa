// find_model and build_graph (see zoo.hpp).
#include "models/zoo.hpp"
#include "models/zoo_seq_len.hpp"

#include "common/error.hpp"
#include "models/inference.hpp"
#include "models/work.hpp"

namespace xpusim {

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
  if (spec.llm && spec.positions_follow_seq_len) spec.llm->max_positions = seq_len;
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
