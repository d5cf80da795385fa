// The ONNX operator table: one {op_type, handler} row per operator the importer takes. Its
// keys ARE the supported set: check_graph (onnx_import.cpp) refuses any other operator by
// node name before lowering starts, and Lowerer::lower dispatches through it. docs/onnx.md
// lists the same operators with how each is priced (a unit test compares the two lists).
#include <algorithm>
#include <map>

#include "models/onnx/onnx_lowerer.hpp"

namespace xpusim::onnx {

const std::vector<Lowerer::OpEntry>& Lowerer::op_table() {
  using L = Lowerer;
  static const std::vector<OpEntry> table = {
      // values and aliases
      {"Constant", [](L& l, size_t i) { l.lower_constant(i); }},
      {"Identity", [](L& l, size_t i) { l.lower_identity(i); }},
      {"Shape", [](L& l, size_t i) { l.lower_shape(i); }},
      // convolutional networks
      {"Conv", [](L& l, size_t i) { l.lower_conv(i); }},
      {"BatchNormalization", [](L& l, size_t i) { l.lower_batch_norm(i); }},
      {"Relu", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::relu); }},
      {"Sigmoid", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::sigmoid); }},
      {"Tanh", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::tanh); }},
      // piecewise-linear activations: one elementwise pass, priced as relu
      {"Clip", [](L& l, size_t i) { l.lower_clip(i); }},
      {"HardSigmoid", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::relu); }},
      {"HardSwish", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::relu); }},
      {"LeakyRelu", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::relu); }},
      // transcendental activations: priced as sigmoid (one exp per element)
      {"Softplus", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::sigmoid); }},
      {"Elu", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::sigmoid); }},
      {"Mish", [](L& l, size_t i) { l.lower_activation(i, ActivationFn::gelu); }},
      {"MaxPool", [](L& l, size_t i) { l.lower_pool(i); }},
      {"AveragePool", [](L& l, size_t i) { l.lower_pool(i); }},
      {"GlobalAveragePool", [](L& l, size_t i) { l.lower_global_pool(i); }},
      {"Pad", [](L& l, size_t i) { l.lower_pad(i); }},
      {"Resize", [](L& l, size_t i) { l.lower_resize(i); }},
      {"Upsample", [](L& l, size_t i) { l.lower_resize(i); }},
      // dense layers and Transformers
      {"Gemm", [](L& l, size_t i) { l.lower_gemm(i); }},
      {"MatMul", [](L& l, size_t i) { l.lower_matmul(i); }},
      {"Einsum", [](L& l, size_t i) { l.lower_einsum(i); }},
      {"Add", [](L& l, size_t i) { l.lower_binary(i); }},
      {"Mul", [](L& l, size_t i) { l.lower_binary(i); }},
      {"Div", [](L& l, size_t i) { l.lower_binary(i); }},
      {"Sub", [](L& l, size_t i) { l.lower_binary(i); }},
      {"LayerNormalization", [](L& l, size_t i) { l.lower_layer_norm(i); }},
      {"ReduceMean", [](L& l, size_t i) { l.lower_reduce_mean(i); }},
      {"Softmax", [](L& l, size_t i) { l.lower_softmax(i); }},
      {"Where", [](L& l, size_t i) { l.lower_masked_softmax(i, 2); }},
      {"Erf", [](L& l, size_t i) {
         l.fail(i, "Erf is supported only inside the GELU pattern x * 0.5 * (1 + erf(x / sqrt(2)))");
       }},
      {"Dropout", [](L& l, size_t i) { l.lower_dropout(i); }},
      // data movement
      {"Concat", [](L& l, size_t i) { l.lower_concat(i); }},
      {"Split", [](L& l, size_t i) { l.lower_split(i); }},
      {"Slice", [](L& l, size_t i) { l.lower_slice(i); }},
      {"Reshape", [](L& l, size_t i) { l.lower_reshape(i); }},
      {"Flatten", [](L& l, size_t i) { l.lower_flatten(i); }},
      {"Squeeze", [](L& l, size_t i) { l.lower_squeeze(i); }},
      {"Unsqueeze", [](L& l, size_t i) { l.lower_squeeze(i); }},
      {"Transpose", [](L& l, size_t i) { l.lower_transpose(i); }},
      {"Gather", [](L& l, size_t i) { l.lower_gather(i); }},
      {"Expand", [](L& l, size_t i) { l.lower_expand(i); }},
  };
  // Folded when every input is constant (shape subgraphs, masks, position ids); on computed
  // tensors only inside the patterns of onnx_patterns.cpp.
  // Data-only operators are folded before their handler runs (Lowerer::try_fold) when every
  // input is constant; the handlers below run only on computed tensors.
  static const std::vector<OpEntry> with_folded = [] {
    std::vector<OpEntry> t = table;
    for (const char* op : {"Cast", "Pow", "Sqrt", "Neg", "Equal", "Less", "Greater", "Not", "And", "Or",
                           "ConstantOfShape", "Range", "Floor", "Ceil", "Abs", "Mod", "ScatterND"})
      t.push_back({op, [](L& l, size_t i) {
                     l.fail(i, "supported only when every input is constant (folded) or inside a pattern "
                                       "(docs/onnx.md)");
                   }});
    return t;
  }();
  return with_folded;
}

const Lowerer::Handler* Lowerer::handler(const std::string& op_type) {
  static const std::map<std::string, Handler> by_name = [] {
    std::map<std::string, Handler> m;
    for (const auto& e : op_table())
      if (!m.emplace(e.op_type, e.lower).second) throw InternalError(std::string("onnx: operator twice: ") + e.op_type);
    return m;
  }();
  auto it = by_name.find(op_type);
  return it == by_name.end() ? nullptr : &it->second;
}

bool is_supported_op(const std::string& op_type) { return Lowerer::handler(op_type) != nullptr; }

std::vector<std::string> supported_op_types() {
  std::vector<std::string> ops;
  for (const auto& e : Lowerer::op_table()) ops.push_back(e.op_type);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace xpusim::onnx
