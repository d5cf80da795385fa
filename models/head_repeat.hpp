// Grouped-query attention's head repeat (Hugging Face's repeat_kv) as an executing backend sees
// it: a one-input Concat along the last axis whose attrs.heads names the query heads
// (repeat_heads below), and the one-output Split that is its gradient. Query head h
// reads key/value head h / group (group = heads / kv_heads); the gradient of a key/value head
// is the sum over the `group` query heads that share it. The layout and the host loops live
// here so the CUDA kernels, the CPU runner and the GPU tests' reference agree on one mapping.
#pragma once
#include <cstdint>
#include <optional>

#include <string>

#include "models/builder.hpp"
#include "models/graph.hpp"

namespace xpusim {

// Adds the repeat of x's key/value heads to `heads` query heads along the last axis (width:
// heads x head_dim): a ModelBuilder::copy_to whose attrs.heads says which column each output
// column copies, so that executing backends can run it. InternalError unless both sides hold
// whole heads and the key/value heads divide the query heads.
int repeat_heads(ModelBuilder& b, int x, int64_t width, int64_t heads, const std::string& name);

struct HeadRepeat {
  int64_t rows = 0;      // the leading dimensions flattened (batch x tokens)
  int64_t kv_heads = 0;  // heads of the narrow side (x of the repeat, dx of its gradient)
  int64_t group = 1;     // query heads per key/value head
  int64_t head_dim = 0;  // elements per head
  int64_t narrow() const { return kv_heads * head_dim; }         // row width of x / dx
  int64_t wide() const { return kv_heads * group * head_dim; }   // row width of y / dy
};

// The repeat an op performs: a one-input Concat (or the one-output Split of its gradient) along
// the last axis with attrs.heads > 1 whose wide side is heads x head_dim and whose narrow side
// holds a whole number of those heads, the group dividing the heads. nullopt for any other op
// (a true concatenation, an imported model's slice or pad).
std::optional<HeadRepeat> head_repeat_of(const OpGraph& g, const OpNode& op);

// y[r, h dh + j] = x[r, (h / group) dh + j].
void head_repeat_forward(const HeadRepeat& h, const float* x, float* y);
// dx[r, k dh + j] = sum over g < group of dy[r, (k group + g) dh + j] (accumulated in double).
void head_repeat_backward(const HeadRepeat& h, const float* dy, float* dx);

}  // namespace xpusim
