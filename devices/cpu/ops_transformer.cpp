// Transformer op kinds on the CPU backend: layer norm, attention, softmax, transpose, scale.
// PLACEHOLDER until the real kernels land: each handler refuses the op (UnavailableError),
// so a graph using them fails loudly instead of computing nonsense.
#include "common/error.hpp"
#include "devices/cpu/runner.hpp"

namespace xpusim::cpu {

namespace {
[[noreturn]] void not_yet(const OpGraph& g, int i) {
  throw UnavailableError(std::string("cpu backend: op kind ") + op_kind_name(g.op(i).kind) + " (" + g.op(i).name +
                         ") is not implemented yet");
}
}  // namespace

void Runner::on_LayerNorm(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_LayerNormBackward(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_Attention(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_AttentionBackward(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_Softmax(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_SoftmaxBackward(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_Transpose(const OpGraph& g, int i) { not_yet(g, i); }
void Runner::on_Scale(const OpGraph& g, int i) { not_yet(g, i); }

}  // namespace xpusim::cpu
