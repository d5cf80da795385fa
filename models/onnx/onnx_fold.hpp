// Constant folding for the small integer and float tensors an export leaves in a graph:
// Shape -> Gather -> Unsqueeze -> Concat chains that feed Reshape, sliced position ids and
// causal masks, scalar constants. Values are held as doubles (exact for every shape and
// index below 2^53); each result is bounded to kMaxFoldElements.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.hpp"
#include "models/onnx/onnx_model.hpp"

namespace xpusim::onnx {

constexpr int64_t kMaxFoldElements = int64_t{1} << 23;  // 8M: the largest weight an export transposes (ViT-H in_proj, 4.9M)

struct Const {
  Shape shape;
  std::vector<double> v;
  DataType type = DataType::float32;
  int64_t numel() const;
};

// True when fold_node knows op_type (Shape is folded by the caller: it needs the input's
// shape only, not its values).
bool foldable_op(const std::string& op_type);

// Evaluates `node` on constant inputs (an empty Const with type undefined stands for an
// omitted optional input). Throws std::invalid_argument with the reason when the node's
// attributes or shapes are not what the op allows; the importer names file and node.
Const fold_node(const Node& node, const std::vector<Const>& in, int64_t opset);

// ScatterND on constants (onnx_fold_scatter.cpp; fold_node calls it): throws
// std::invalid_argument as fold_node does.
Const fold_scatter_nd(const Node& node, const std::vector<Const>& in);

// An integer held as a double. Beyond 2^53 a double is no longer exact: those values are the
// "to the end" sentinels torch writes for open slices (INT64_MAX, INT64_MIN), held as +-2^62
// so arithmetic on them cannot overflow.
inline int64_t saturated_int(double d) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (d >= kExact) return int64_t{1} << 62;
  if (d <= -kExact) return -(int64_t{1} << 62);
  return static_cast<int64_t>(d);
}

// Broadcast shape of two shapes (numpy rules); throws std::invalid_argument when they do not
// broadcast.
Shape broadcast_shape(const Shape& a, const Shape& b);

}  // namespace xpusim::onnx
