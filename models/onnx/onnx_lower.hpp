// Shape propagation and lowering of a checked ONNX graph onto ModelBuilder calls. One walk
// over the live nodes in topological order serves two passes: a plan pass (no builder) that
// infers every shape, folds constants and finds the host inputs the graph needs (including
// the indices of position embeddings, which become host-fed inputs); and an emit pass that
// declares those inputs, makes the same decisions again and calls the builder.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "models/onnx/onnx_model.hpp"

namespace xpusim::onnx {

// What load_onnx_model checked once; shared by every build of the model.
struct CheckedGraph {
  std::shared_ptr<const OnnxModel> model;
  std::vector<size_t> order;                     // live nodes, topologically sorted
  std::vector<std::string> node_names;           // display name per node (file name or op_type_index)
  std::map<std::string, const TensorProto*> initializers;
  std::vector<const ValueInfo*> host_inputs;     // graph inputs that are not initializers
  std::map<std::string, Shape> input_shapes;     // per host input, dim 0 = 1 (the batch slot)
  std::string output;                            // the graph output the model is trained on
  int64_t opset = 0;
};

// Host inputs the emit pass declares before the first layer (ModelBuilder seals inputs).
struct InputPlan {
  enum class Kind { image, sequence, features } kind = Kind::image;
  std::string name;   // ONNX value it feeds
  Shape shape;        // with the batch
};

struct LoweringResult {
  std::vector<InputPlan> inputs;
  Shape output_shape;
  int output_tensor = -1;  // emit pass: the builder tensor of the graph output
};

// Plan pass when `b` is null, emit pass otherwise (which needs the plan's inputs).
// UserError "FILE: node 'NAME' (OP): ..." for what the importer cannot lower.
LoweringResult lower_graph(const CheckedGraph& g, int64_t batch, ModelBuilder* b, const LoweringResult* plan,
                           bool declare_labels_for_training);

// The supported operator set: the keys of the operator table (onnx_ops.cpp), sorted.
bool is_supported_op(const std::string& op_type);
std::vector<std::string> supported_op_types();

// The one place that turns an imported graph's output into a training objective: labels fed
// per sample (logits [N, C]) or per position (logits [N, T, V]), and softmax cross-entropy.
// `declare_training_labels` runs before the first layer (inputs are sealed then),
// `append_training_loss` after the last.
int declare_training_labels(ModelBuilder& b, const Shape& logits, const std::string& file);
void append_training_loss(ModelBuilder& b, int logits, int labels);

}  // namespace xpusim::onnx
