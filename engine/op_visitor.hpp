// OpVisitor<R>: one pure-virtual handler per op kind, generated from the op registry.
// Every engine derives from it, so adding a kind to XPUSIM_OP_KINDS makes each engine
// abstract (and its construction a compile error) until it handles the new kind.
#pragma once
#include "models/graph.hpp"

namespace xpusim {

template <class R>
class OpVisitor {
 public:
  virtual ~OpVisitor() = default;

#define XPUSIM_HANDLER(k, n) virtual R on_##k(const OpGraph& g, int op) = 0;
  XPUSIM_OP_KINDS(XPUSIM_HANDLER)
#undef XPUSIM_HANDLER

  R visit(const OpGraph& g, int op) {
    switch (g.op(op).kind) {
#define XPUSIM_DISPATCH(k, n) \
  case OpKind::k:             \
    return on_##k(g, op);
      XPUSIM_OP_KINDS(XPUSIM_DISPATCH)
#undef XPUSIM_DISPATCH
    }
    return on_Input(g, op);  // unreachable: the switch covers every kind
  }
};

}  // namespace xpusim
