// The `sequential` family: a model written as a list of layers in YAML, Keras style.
// Each layer is a mapping with `type:` and that type's keys; unknown keys are errors.
//   - {type: conv2d, filters: 32, kernel: 3, stride: 1, padding: same|valid|N, bias: true, activation: relu}
//   - {type: batch_norm} | {type: relu|sigmoid|tanh}
//   - {type: max_pool|avg_pool, size: 2, stride: 2, padding: 0} | {type: global_avg_pool}
//   - {type: flatten} | {type: dropout, rate: 0.5}
//   - {type: dense, units: 512, bias: true, activation: relu}
//   - {type: embedding, vocab: 20000, dim: 128}
//   - {type: lstm, units: 64, return_sequences: false, bidirectional: false}
// The output of the last layer feeds a softmax (or, with one class, sigmoid) cross-entropy;
// `activation: softmax|sigmoid` on the last layer names that loss and adds no op.
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

// The layer types, parsed once from `type:`; both dispatches below are switches, so a new
// type fails to compile (-Werror=switch) until it is parsed and built.
enum class LayerType {
  conv2d,
  batch_norm,
  relu,
  sigmoid,
  tanh,
  max_pool,
  avg_pool,
  global_avg_pool,
  flatten,
  dropout,
  dense,
  embedding,
  lstm
};
constexpr std::pair<LayerType, const char*> kLayerTypes[] = {
    {LayerType::conv2d, "conv2d"},     {LayerType::batch_norm, "batch_norm"},
    {LayerType::relu, "relu"},         {LayerType::sigmoid, "sigmoid"},
    {LayerType::tanh, "tanh"},         {LayerType::max_pool, "max_pool"},
    {LayerType::avg_pool, "avg_pool"}, {LayerType::global_avg_pool, "global_avg_pool"},
    {LayerType::flatten, "flatten"},   {LayerType::dropout, "dropout"},
    {LayerType::dense, "dense"},       {LayerType::embedding, "embedding"},
    {LayerType::lstm, "lstm"},
};

struct Layer {
  LayerType type = LayerType::dense;
  long long filters = 0, kernel = 1, stride = 1, size = 2;
  std::string padding = "valid";
  long long pad = 0;
  bool bias = true;
  std::string activation = "linear";
  long long units = 0, vocab = 0, dim = 0;
  double rate = 0;
  bool return_sequences = false, bidirectional = false;
  std::string name;
  std::string type_name;
  std::string where;  // "file:line: params.layers[i]" for errors found while building
};

Layer parse_layer(const YAML::Node& node, const std::string& file, size_t index) {
  SpecReader r(node, file, "params.layers[" + std::to_string(index) + "]");
  // The builder takes int sizes: bound them so nothing is truncated on the way.
  const auto positive = layer_size_check;
  Layer l;
  l.where = yaml_location(file, node) + ": params.layers[" + std::to_string(index) + "]";
  std::vector<std::string> names;
  for (const auto& [t, n] : kLayerTypes) names.push_back(n);
  const std::string type = r.text("type", std::nullopt, "layer type", names);
  for (const auto& [t, n] : kLayerTypes)
    if (type == n) l.type = t;
  l.type_name = type;
  l.name = r.text("name", type + std::to_string(index), "op name prefix");
  const std::vector<std::string> acts{"linear", "relu", "sigmoid", "tanh", "softmax"};
  switch (l.type) {
    case LayerType::conv2d: {
      l.filters = r.integer("filters", std::nullopt, "channels", "output channels", positive);
      l.kernel = r.integer("kernel", 3, "px", "square kernel size", positive);
      l.stride = r.integer("stride", 1, "px", "stride", positive);
      std::string pad = r.text("padding", std::string("valid"), "same, valid, or a pixel count");
      if (pad == "same")
        l.pad = l.kernel / 2;
      else if (pad == "valid")
        l.pad = 0;
      else {
        try {
          size_t used = 0;
          l.pad = std::stoll(pad, &used);
          if (used != pad.size()) throw std::invalid_argument(pad);
        } catch (...) {
          r.fail("padding", "expected same, valid or a number");
        }
        if (l.pad < 0 || l.pad > kMaxLayerSize) r.fail("padding", "must be in [0, 2147483647]");
      }
      l.bias = r.flag("bias", true, "add a bias");
      l.activation = r.text("activation", std::string("linear"), "activation after the layer", acts);
      break;
    }
    case LayerType::max_pool:
    case LayerType::avg_pool:
      l.size = r.integer("size", 2, "px", "window", positive);
      l.stride = r.integer("stride", l.size, "px", "stride (default: size)", positive);
      l.pad = r.integer("padding", 0, "px", "padding",
                        [](long long v) { return v >= 0 && v <= kMaxLayerSize ? "" : "must be in [0, 2147483647]"; });
      break;
    case LayerType::dropout:
      l.rate = r.number("rate", std::nullopt, "fraction", "drop probability",
                        [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; });
      break;
    case LayerType::dense:
      l.units = r.integer("units", std::nullopt, "units", "output features", positive);
      l.bias = r.flag("bias", true, "add a bias");
      l.activation = r.text("activation", std::string("linear"), "activation after the layer", acts);
      break;
    case LayerType::embedding:
      l.vocab = r.integer("vocab", std::nullopt, "tokens", "vocabulary size", positive);
      l.dim = r.integer("dim", std::nullopt, "features", "embedding width", positive);
      break;
    case LayerType::lstm:
      l.units = r.integer("units", std::nullopt, "units", "hidden size", positive);
      l.return_sequences = r.flag("return_sequences", false, "output every timestep");
      l.bidirectional = r.flag("bidirectional", false, "a forward and a backward LSTM, concatenated");
      break;
    case LayerType::batch_norm:
    case LayerType::relu:
    case LayerType::sigmoid:
    case LayerType::tanh:
    case LayerType::global_avg_pool:
    case LayerType::flatten:
      break;  // no keys beyond type and name
  }
  r.finish();
  return l;
}

int apply_activation(ModelBuilder& b, int x, const std::string& act, const std::string& name, bool last) {
  if (act == "relu") return b.relu(x, name + ".relu");
  if (act == "sigmoid" && !last) return b.activation(x, ActivationFn::sigmoid, name + ".sigmoid");
  if (act == "tanh") return b.activation(x, ActivationFn::tanh, name + ".tanh");
  return x;  // linear, or softmax/sigmoid folded into the loss
}

}  // namespace

ModelBuildFn parse_sequential(SpecReader& r) {
  YAML::Node layers = r.child("layers", "list of layers (see models/zoo/sequential.cpp)", true);
  if (!layers.IsSequence() || layers.size() == 0) r.fail("layers", "expected a non-empty list of layers");
  std::vector<Layer> parsed;
  for (size_t i = 0; i < layers.size(); ++i) parsed.push_back(parse_layer(layers[i], r.file(), i));
  for (size_t i = 0; i + 1 < parsed.size(); ++i)
    if (parsed[i].activation == "softmax")
      throw UserError(yaml_location(r.file(), layers[i]) + ": params.layers[" + std::to_string(i) +
                      "].activation: softmax is only allowed on the last layer (it is the loss)");
  return [parsed](ModelBuilder& b, const ModelSpec& s) {
    int x, labels;
    if (s.task == ModelTask::image) {
      Inputs in = image_inputs(b, s);
      x = in.x;
      labels = in.labels;
    } else {
      x = s.features > 0 ? b.feature_input("features", s.input[0], s.features) : b.sequence_input("tokens", s.input[0]);
      labels = b.labels();
    }
    for (size_t i = 0; i < parsed.size(); ++i) {
      const Layer& l = parsed[i];
      const bool last = i + 1 == parsed.size();
      const std::string& n = l.name;
      // A layer whose shape cannot follow the previous one is an error in this file: name
      // the layer's line (the builder knows only op names).
      try {
      switch (l.type) {
        case LayerType::conv2d:
          x = b.conv(x, static_cast<int>(l.filters), static_cast<int>(l.kernel), static_cast<int>(l.stride),
                     static_cast<int>(l.pad), l.bias, n);
          x = apply_activation(b, x, l.activation, n, last);
          break;
        case LayerType::batch_norm:
          x = b.batch_norm(x, n);
          break;
        case LayerType::relu:
          x = b.relu(x, n);
          break;
        case LayerType::sigmoid:
          x = b.activation(x, ActivationFn::sigmoid, n);
          break;
        case LayerType::tanh:
          x = b.activation(x, ActivationFn::tanh, n);
          break;
        case LayerType::max_pool:
          x = b.max_pool(x, static_cast<int>(l.size), static_cast<int>(l.stride), static_cast<int>(l.pad), n);
          break;
        case LayerType::avg_pool:
          x = b.avg_pool(x, static_cast<int>(l.size), static_cast<int>(l.stride), static_cast<int>(l.pad), n);
          break;
        case LayerType::global_avg_pool:
          x = b.global_avg_pool(x, n);
          break;
        case LayerType::flatten:
          x = b.flatten(x, n);
          break;
        case LayerType::dropout:
          x = b.dropout(x, l.rate, n);
          break;
        case LayerType::dense:
          x = b.dense(x, l.units, l.bias, n);
          x = apply_activation(b, x, l.activation, n, last);
          break;
        case LayerType::embedding:
          x = b.embedding(x, l.vocab, l.dim, n);
          break;
        case LayerType::lstm:
          if (l.bidirectional) {
            int f = b.lstm(x, l.units, l.return_sequences, false, n + ".forward");
            int r2 = b.lstm(x, l.units, l.return_sequences, true, n + ".backward");
            x = b.concat({f, r2}, -1, n);
          } else {
            x = b.lstm(x, l.units, l.return_sequences, false, n);
          }
          break;
      }
      } catch (const FieldError&) {
        throw;
      } catch (const std::exception& e) {
        throw UserError(l.where + " (" + l.type_name + "): " + e.what());
      }
    }
    if (b.shape(x).back() != s.classes)
      throw UserError(s.file + ": classes: the last layer has " + std::to_string(b.shape(x).back()) +
                      " outputs but classes is " + std::to_string(s.classes));
    b.softmax_cross_entropy(x, labels, "loss");
  };
}

}  // namespace xpusim::zoo
