// Transformer op kinds on the CUDA backend: layer norm, attention, softmax, transpose, scale.
// PLACEHOLDER until the real kernels land: each handler refuses the op (UnavailableError),
// so a graph using them fails loudly instead of computing nonsense.
#include "common/error.hpp"
#include "devices/cuda/replica.hpp"

namespace xpusim::cuda {

namespace {
[[noreturn]] void not_yet(const OpGraph& g, int i) {
  throw UnavailableError(std::string("cuda backend: op kind ") + op_kind_name(g.op(i).kind) + " (" + g.op(i).name +
                         ") is not implemented yet");
}
}  // namespace

void Replica::on_LayerNorm(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_LayerNormBackward(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_Attention(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_AttentionBackward(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_Softmax(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_SoftmaxBackward(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_Transpose(const OpGraph& g, int i) { not_yet(g, i); }
void Replica::on_Scale(const OpGraph& g, int i) { not_yet(g, i); }

}  // namespace xpusim::cuda
