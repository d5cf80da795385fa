// The op registry: the one list of op kinds. Adding an op kind is one line here.
//
// Every engine implements an OpVisitor subclass (engine/op_visitor.hpp) whose handler per
// kind is pure virtual, so an engine that misses a new kind fails to compile. The work
// counter (models/work.cpp) and the training lowering (models/training.cpp) switch over
// OpKind with -Werror=switch, so they fail to compile too.
//
// Columns: X(Kind, "json_name", phase_hint)
#pragma once
#include <array>
#include <string>

namespace xpusim {

#define XPUSIM_OP_KINDS(X)                                                              \
  X(Input, "input")                             /* host-fed batch: images/ids + labels */ \
  X(Conv2D, "conv2d")                           /* NCHW conv, stride/pad/dilation/groups */ \
  X(Conv2DBackwardData, "conv2d_backward_data") /* dX = dY (*) W^T                     */ \
  X(Conv2DBackwardFilter, "conv2d_backward_filter") /* dW = X (*) dY (+ db)            */ \
  X(MatMul, "matmul")                           /* [M,K] x [K,N] (+ bias), dense layers */ \
  X(BatchNorm, "batch_norm")                    /* training-mode batch statistics       */ \
  X(BatchNormBackward, "batch_norm_backward")                                             \
  X(Activation, "activation")                   /* relu / sigmoid / tanh, elementwise   */ \
  X(ActivationBackward, "activation_backward")                                            \
  X(Add, "add")                                 /* n-ary elementwise sum (residuals, grad accumulation) */ \
  X(Mul, "mul")                                 /* elementwise product                  */ \
  X(Pool, "pool")                               /* max / avg / global-avg pooling       */ \
  X(PoolBackward, "pool_backward")                                                        \
  X(Concat, "concat")                           /* along channels (or features)         */ \
  X(Split, "split")                             /* inverse of concat (its gradient)     */ \
  X(Reshape, "reshape")                         /* flatten and views: no data movement  */ \
  X(Dropout, "dropout")                                                                   \
  X(DropoutBackward, "dropout_backward")                                                  \
  X(SoftmaxCrossEntropy, "softmax_cross_entropy") /* loss; sigmoid CE when classes==1   */ \
  X(SoftmaxCrossEntropyBackward, "softmax_cross_entropy_backward")                       \
  X(Embedding, "embedding")                     /* gather rows of a table               */ \
  X(EmbeddingBackward, "embedding_backward")    /* scatter-add into the table gradient  */ \
  X(LSTM, "lstm")                               /* a whole sequence, timesteps serial   */ \
  X(LSTMBackward, "lstm_backward")                                                        \
  X(LayerNorm, "layer_norm")                    /* over the last axis, gamma/beta [D]     */ \
  X(LayerNormBackward, "layer_norm_backward")                                             \
  X(Attention, "attention")                     /* multi-head softmax(QK^T/sqrt(d)) V     */ \
  X(AttentionBackward, "attention_backward")                                              \
  X(Softmax, "softmax")                         /* over the last axis (no loss)           */ \
  X(SoftmaxBackward, "softmax_backward")                                                  \
  X(Transpose, "transpose")                     /* axis permutation: a copy               */ \
  X(Scale, "scale")                             /* y = alpha x                            */ \
  X(SGDMomentumUpdate, "sgd_momentum_update")   /* v = mu v + g (+wd w); w -= lr v       */ \
  X(AdamUpdate, "adam_update")                                                            \
  X(AllReduce, "all_reduce")                    /* data-parallel gradient sum           */

enum class OpKind {
#define XPUSIM_ENUM(k, n) k,
  XPUSIM_OP_KINDS(XPUSIM_ENUM)
#undef XPUSIM_ENUM
};

#define XPUSIM_COUNT(k, n) +1
inline constexpr int kNumOpKinds = 0 XPUSIM_OP_KINDS(XPUSIM_COUNT);
#undef XPUSIM_COUNT

inline const char* op_kind_name(OpKind k) {
  switch (k) {
#define XPUSIM_NAME(k, n) \
  case OpKind::k:         \
    return n;
    XPUSIM_OP_KINDS(XPUSIM_NAME)
#undef XPUSIM_NAME
  }
  return "?";
}

// All kinds in registry order, for iteration in tests and reports.
inline constexpr std::array<OpKind, kNumOpKinds> all_op_kinds() {
  return {
#define XPUSIM_LIST(k, n) OpKind::k,
      XPUSIM_OP_KINDS(XPUSIM_LIST)
#undef XPUSIM_LIST
  };
}

}  // namespace xpusim
