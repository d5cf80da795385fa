// Inference lowering: the forward graph a zoo family builds (inputs, labels, layers, loss)
// -> the graph of one inference pass. What a framework runs for model.eval() / predict():
//   - no labels input and no loss op: the outputs are the logits of the model's loss ops
//     (BERT pre-training keeps both heads); a head whose loss is marked training_only
//     (Inception's auxiliary classifier) is removed with every op that only fed it;
//   - dropout is the identity: its consumers read its input directly;
//   - no backward, no all-reduce, no optimizer update, no gradient buffers;
//   - batch norm normalises with running statistics (work.cpp counts 2 FLOPs per element).
// The weights stay fp32 tensors so that every engine's kernels run unchanged; the memory
// figure (graph_totals) counts them in the compute type, since a framework serving a model
// in bf16/fp16 holds no fp32 master copy (docs/op-graph.md, "Inference").
#pragma once
#include "models/graph.hpp"

namespace xpusim {

// `forward` must be a forward graph (not a training step). The result has task inference.
OpGraph lower_to_inference(const OpGraph& forward);

}  // namespace xpusim
