#include "models/onnx/onnx_import.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "common/error.hpp"
#include "models/onnx/onnx_fold.hpp"
#include "models/onnx/onnx_lower.hpp"
#include "models/model_spec.hpp"

namespace xpusim {

namespace {

using namespace onnx;

// ai.onnx opsets whose semantics the lowering follows (Unsqueeze/Squeeze/Slice axes as
// inputs from 13; LayerNormalization from 17; ReduceMean axes as an input from 18).
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 18;

std::string node_display_name(const Node& n, size_t index) {
  return n.name.empty() ? n.op_type + "_" + std::to_string(index) : n.name;
}

std::shared_ptr<CheckedGraph> check_graph(const std::string& path, const OnnxImportOptions& opts) {
  auto g = std::make_shared<CheckedGraph>();
  auto model = std::make_shared<OnnxModel>(load_onnx_file(path));
  g->model = model;
  const Graph& gr = model->graph;
  const std::string& file = model->file;

  auto op = model->opsets.find("");
  if (op == model->opsets.end())
    throw UserError(file + ": imports no ai.onnx opset; supported: opset " + std::to_string(kMinOpset) + " to " +
                    std::to_string(kMaxOpset));
  g->opset = op->second;
  if (g->opset < kMinOpset || g->opset > kMaxOpset)
    throw UserError(file + ": ai.onnx opset " + std::to_string(g->opset) + " is not supported (supported: " +
                    std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                    "; re-export with opset_version=17)");

  for (size_t i = 0; i < gr.nodes.size(); ++i) g->node_names.push_back(node_display_name(gr.nodes[i], i));
  for (size_t i = 0; i < gr.nodes.size(); ++i) {
    const Node& n = gr.nodes[i];
    if (!n.domain.empty() && n.domain != "ai.onnx")
      throw UserError(file + ": node '" + g->node_names[i] + "' (" + n.op_type + "): operator of domain '" + n.domain +
                      "' is not supported (docs/onnx.md lists the supported operators)");
    if (!is_supported_op(n.op_type))
      throw UserError(file + ": node '" + g->node_names[i] + "' (" + n.op_type +
                      "): operator not supported (docs/onnx.md lists the supported operators)");
  }

  for (const auto& t : gr.initializers) {
    if (t.name.empty()) throw UserError(file + ": an initializer has no name");
    int64_t n = t.numel();
    if (n < 0 || n > (int64_t{1} << 44))
      throw UserError(file + ": initializer '" + t.name + "' has " + (n < 0 ? "overflowing" : "too large") + " dims");
    // A second initializer of one name silently replaced the first.
    if (!g->initializers.emplace(t.name, &t).second)
      throw UserError(file + ": initializer '" + t.name + "' is given twice");
  }
  for (const auto& in : gr.inputs)
    if (!g->initializers.count(in.name)) g->host_inputs.push_back(&in);
  if (g->host_inputs.empty()) throw UserError(file + ": the graph has no inputs (every input is an initializer)");
  for (const ValueInfo* in : g->host_inputs)
    if (in->elem_type == DataType::float64)
      throw UserError(file + ": input '" + in->name +
                      "' is double (float64); models train in float32, float16 or bfloat16: export it in float32");
  if (gr.outputs.empty()) throw UserError(file + ": the graph has no outputs");
  g->output = gr.outputs[0].name;

  std::set<std::string> graph_inputs;
  for (const auto* in : g->host_inputs)
    if (in->name.empty() || !graph_inputs.insert(in->name).second)
      throw UserError(file + ": graph input '" + in->name + "' is declared twice or has no name");
  // Producers; a value written twice breaks single assignment.
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < gr.nodes.size(); ++i)
    for (const auto& o : gr.nodes[i].outputs) {
      if (o.empty()) continue;
      if (!producer.emplace(o, i).second || g->initializers.count(o) || graph_inputs.count(o))
        throw UserError(file + ": node '" + g->node_names[i] + "' (" + gr.nodes[i].op_type + "): output '" + o +
                        "' is also produced elsewhere");
    }
  for (size_t i = 0; i < gr.nodes.size(); ++i)
    for (const auto& in : gr.nodes[i].inputs)
      if (!in.empty() && !producer.count(in) && !g->initializers.count(in) && !graph_inputs.count(in))
        throw UserError(file + ": node '" + g->node_names[i] + "' (" + gr.nodes[i].op_type + "): input '" + in +
                        "' is neither a graph input, an initializer nor a node's output");
  if (!producer.count(g->output) && !graph_inputs.count(g->output))
    throw UserError(file + ": graph output '" + g->output + "' is produced by no node");

  // Live nodes (those the output depends on), then Kahn's topological sort over them.
  std::vector<bool> live(gr.nodes.size(), false);
  std::vector<size_t> stack;
  if (producer.count(g->output)) stack.push_back(producer[g->output]);
  while (!stack.empty()) {
    size_t i = stack.back();
    stack.pop_back();
    if (live[i]) continue;
    live[i] = true;
    for (const auto& in : gr.nodes[i].inputs)
      if (auto it = producer.find(in); it != producer.end() && !live[it->second]) stack.push_back(it->second);
  }
  std::vector<int> pending(gr.nodes.size(), 0);
  std::map<size_t, std::vector<size_t>> users;
  for (size_t i = 0; i < gr.nodes.size(); ++i) {
    if (!live[i]) continue;
    for (const auto& in : gr.nodes[i].inputs)
      if (auto it = producer.find(in); it != producer.end()) {
        ++pending[i];
        users[it->second].push_back(i);
      }
  }
  std::vector<size_t> ready;
  for (size_t i = gr.nodes.size(); i-- > 0;)
    if (live[i] && pending[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    // Smallest index first: file order when the file is already sorted (deterministic).
    auto it = std::min_element(ready.begin(), ready.end());
    size_t i = *it;
    ready.erase(it);
    g->order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push_back(u);
  }
  size_t n_live = static_cast<size_t>(std::count(live.begin(), live.end(), true));
  if (g->order.size() != n_live) {
    for (size_t i = 0; i < gr.nodes.size(); ++i)
      if (live[i] && pending[i] > 0)
        throw UserError(file + ": node '" + g->node_names[i] + "' (" + gr.nodes[i].op_type +
                        "): the graph has a cycle through this node");
  }

  // Input shapes: dim 0 is the batch; every other dimension must be known or overridden.
  for (const auto& [name, shape] : opts.input_shapes)
    if (!graph_inputs.count(name)) {
      std::string list;
      for (const auto* in : g->host_inputs) list += (list.empty() ? "" : ", ") + in->name;
      throw FieldError("input_shape", "'" + name + "' is not an input of " + file + " (inputs: " + list + ")");
    }
  for (const ValueInfo* in : g->host_inputs) {
    auto ov = opts.input_shapes.find(in->name);
    Shape s;
    if (ov != opts.input_shapes.end()) {
      s = ov->second;
      if (in->has_shape && s.size() != in->dims.size())
        throw FieldError("input_shape", in->name + ": rank " + std::to_string(s.size()) + " given, " + file +
                                            " declares rank " + std::to_string(in->dims.size()));
    } else {
      if (!in->has_shape)
        throw FieldError("input_shape", file + ": input '" + in->name + "' has no shape; give it as " + in->name + "=DxDx...");
      for (size_t k = 0; k < in->dims.size(); ++k) {
        const Dim& d = in->dims[k];
        if (k == 0) {
          s.push_back(1);  // the batch, set per build
          continue;
        }
        // A size the file states that is not one (0, or 2^63 read back as negative) is the
        // file's error, not a dynamic dimension the user was asked to give.
        if (d.value && (*d.value <= 0 || *d.value > 2147483647))
          throw UserError(file + ": input '" + in->name + "' dimension " + std::to_string(k) + " is " +
                          std::to_string(*d.value) + " (must be in [1, 2147483647])");
        // A FieldError: the fix is the input_shape field (--input-shape on the command line).
        if (!d.value)
          throw FieldError("input_shape", file + ": input '" + in->name + "' dimension " + std::to_string(k) +
                                              " is dynamic (" +
                                              (d.param.empty() ? std::string("no value") : "'" + d.param + "'") +
                                              "); give the input's shape as " + in->name + "=DxDx...");
        s.push_back(*d.value);
      }
    }
    if (s.empty()) throw UserError(file + ": input '" + in->name + "' is a scalar; inputs need a batch dimension");
    for (auto d : s)
      if (d <= 0 || d > 2147483647)
        throw FieldError("input_shape", file + ": input '" + in->name + "': dimensions must be in [1, 2147483647]");
    s[0] = 1;
    g->input_shapes[in->name] = s;
  }
  return g;
}

// torch's eval-mode export folds each BatchNormalization that follows a convolution into that
// convolution: the folded bias is an initializer the exporter computed, named "onnx::Conv_N"
// (a module's own bias keeps its parameter name), and a BatchNormalization left elsewhere
// runs in inference mode (no training_mode, one output). Either means the parameter count
// is the folded model's, not the module's.
std::string eval_mode_note(const CheckedGraph& g) {
  int folded = 0, inference_bn = 0;
  for (size_t i : g.order) {
    const Node& n = g.model->graph.nodes[i];
    if (n.op_type == "Conv" && n.inputs.size() > 2 && n.inputs[2].rfind("onnx::Conv_", 0) == 0) ++folded;
    if (n.op_type == "BatchNormalization") {
      const Attribute* tm = n.attr("training_mode");
      if (!tm || tm->i == 0) ++inference_bn;
    }
  }
  if (folded == 0 && inference_bn == 0) return "";
  std::string note = "this looks like an eval-mode export: ";
  if (folded > 0)
    note += std::to_string(folded) + " convolutions have a bias the exporter computed (a BatchNormalization folded "
            "into the convolution: C fewer parameters per folded BatchNorm of C channels than the module, and no "
            "BatchNorm in the training step)";
  if (inference_bn > 0)
    note += std::string(folded > 0 ? "; " : "") + std::to_string(inference_bn) +
            " BatchNormalization nodes are in inference mode";
  return note + "; export with training=torch.onnx.TrainingMode.TRAINING to model the training step's BatchNorm";
}

}  // namespace

bool is_onnx_path(const std::string& p) {
  if (p.size() < 5) return false;
  std::string ext = p.substr(p.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".onnx";
}

void parse_input_shape(const std::string& text, OnnxImportOptions& o) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw FieldError("input_shape", "expected NAME=DxDx..., got '" + text + "'");
  std::string name = text.substr(0, eq);
  Shape s;
  std::string rest = text.substr(eq + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t x = rest.find('x', pos);
    std::string d = rest.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (d.empty() || d.size() > 10 || !std::all_of(d.begin(), d.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw FieldError("input_shape", "'" + text + "': dimensions must be positive integers separated by 'x'");
    long long v = std::stoll(d);
    if (v <= 0 || v > 2147483647) throw FieldError("input_shape", "'" + text + "': dimensions must be in [1, 2147483647]");
    s.push_back(v);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (o.input_shapes.count(name)) throw FieldError("input_shape", "'" + name + "' given twice");
  o.input_shapes[name] = s;
}

ModelSpec load_onnx_model(const std::string& path, const OnnxImportOptions& opts) {
  std::shared_ptr<const CheckedGraph> g = check_graph(path, opts);
  // A plan at batch 1 checks every node now (shapes, patterns, constants), so a bad file fails
  // when it is named, not at its first build, and tells the sample shape and classes.
  LoweringResult plan = lower_graph(*g, 1, nullptr, nullptr, false);
  ModelSpec s;
  s.file = path;
  // The file name, extension included: an export named resnet50.onnx is not the zoo's resnet50.
  s.name = std::filesystem::path(path).filename().string();
  s.family = "onnx";
  s.description = "imported from " + path;
  s.dataset = "";  // synthetic data only: an imported model names no dataset
  const InputPlan& first = plan.inputs.front();
  s.task = first.kind == InputPlan::Kind::image ? ModelTask::image : ModelTask::sequence;
  s.input.assign(first.shape.begin() + 1, first.shape.begin() + (first.kind == InputPlan::Kind::features ? 2 : first.shape.size()));
  if (first.kind == InputPlan::Kind::features) s.features = first.shape[2];
  s.classes = plan.output_shape.empty() ? 0 : plan.output_shape.back();
  s.optimizer = "sgd_momentum";
  if (std::string note = eval_mode_note(*g); !note.empty()) s.notes.push_back(note);
  s.build = [g](ModelBuilder& b, const ModelSpec&) {
    const int64_t batch = b.graph().batch;
    LoweringResult p = lower_graph(*g, batch, nullptr, nullptr, true);
    lower_graph(*g, batch, &b, &p, true);
  };
  return s;
}

}  // namespace xpusim
