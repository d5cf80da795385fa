// Lowering a training-step graph to the per-core TPU program. The fusion and tiling rules
// and their sources are in docs/tpu-model.md; this file applies them.
#include "sim/tpu/lowering.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/error.hpp"
#include "engine/op_visitor.hpp"
#include "sim/tpu/mxu_timing.hpp"

namespace xpusim::tpu {

namespace {

enum class Role { mxu, vector, elementwise, copy, free, ici, infeed };

// What one graph op asks of the core: the visitor below is the only place that knows op kinds.
struct OpNeeds {
  Role role = Role::free;
  GemmShape gemm;            // MXU ops
  int64_t gemm_repeats = 1;  // groups of a grouped conv, timesteps of an LSTM
  bool chunk_contraction = false;  // split over L (weight gradients) instead of P
  int hbm_passes = 1;        // reads of the inputs (2 for batch norm: statistics, then apply)
  double anchor_vector_flops = 0;  // MXU ops: FLOPs of the op itself that run on the vector unit
  // The repeats are independent products with operands of their own (a batched matmul, one
  // GEMM per batch element and head of attention): VMEM chunks split the repeats, each chunk
  // running whole GEMMs, instead of splitting every GEMM's rows (see chunking below).
  bool independent_repeats = false;
  // Only the orientation with the weights held in the array (conv at a small batch; conv()).
  bool weights_stationary = false;
};

class Classifier final : public OpVisitor<OpNeeds> {
 public:
  explicit Classifier(int64_t array_rows) : rows_(array_rows) {}
  static OpNeeds of(Role r) { OpNeeds n; n.role = r; return n; }
  static int64_t numel(const OpGraph& g, int t) { return g.tensor(t).desc.numel(); }

  OpNeeds on_Input(const OpGraph&, int) override { return of(Role::infeed); }
  OpNeeds on_Conv2D(const OpGraph& g, int i) override { return conv(g, g.op(i), 0); }
  OpNeeds on_Conv2DBackwardData(const OpGraph& g, int i) override { return conv(g, g.op(g.op(i).forward_op), 1); }
  OpNeeds on_Conv2DBackwardFilter(const OpGraph& g, int i) override { return conv(g, g.op(g.op(i).forward_op), 2); }
  OpNeeds on_MatMul(const OpGraph& g, int i) override {
    const OpAttrs& a = g.op(i).attrs;
    OpNeeds n = of(Role::mxu);
    n.gemm = {a.m, a.k, a.n};
    n.gemm_repeats = a.batches;
    n.independent_repeats = a.batches > 1;
    return n;
  }
  OpNeeds on_LayerNorm(const OpGraph&, int) override { OpNeeds n = of(Role::vector); n.hbm_passes = 2; return n; }
  OpNeeds on_LayerNormBackward(const OpGraph&, int) override { OpNeeds n = of(Role::vector); n.hbm_passes = 2; return n; }
  OpNeeds on_Attention(const OpGraph& g, int i) override { return attention(g, g.op(i), g.op(i), 2, 5.0); }
  OpNeeds on_AttentionBackward(const OpGraph& g, int i) override {
    return attention(g, g.op(i), g.op(g.op(i).forward_op), 4, 4.0);
  }
  OpNeeds on_Softmax(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_SoftmaxBackward(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_Transpose(const OpGraph&, int) override { return of(Role::copy); }
  OpNeeds on_Scale(const OpGraph&, int) override { return of(Role::elementwise); }
  // Training reads the input twice (statistics, then apply); inference applies running
  // statistics in one pass.
  OpNeeds on_BatchNorm(const OpGraph& g, int) override {
    OpNeeds n = of(Role::vector);
    n.hbm_passes = g.task == xpusim::Task::inference ? 1 : 2;
    return n;
  }
  OpNeeds on_BatchNormBackward(const OpGraph&, int) override { OpNeeds n = of(Role::vector); n.hbm_passes = 2; return n; }
  OpNeeds on_Activation(const OpGraph&, int) override { return of(Role::elementwise); }
  OpNeeds on_ActivationBackward(const OpGraph&, int) override { return of(Role::elementwise); }
  OpNeeds on_Add(const OpGraph&, int) override { return of(Role::elementwise); }
  OpNeeds on_Mul(const OpGraph&, int) override { return of(Role::elementwise); }
  OpNeeds on_Pool(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_PoolBackward(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_Concat(const OpGraph&, int) override { return of(Role::copy); }
  OpNeeds on_Split(const OpGraph&, int) override { return of(Role::copy); }
  OpNeeds on_Reshape(const OpGraph&, int) override { return of(Role::free); }
  OpNeeds on_Dropout(const OpGraph&, int) override { return of(Role::elementwise); }
  OpNeeds on_DropoutBackward(const OpGraph&, int) override { return of(Role::elementwise); }
  OpNeeds on_SoftmaxCrossEntropy(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_SoftmaxCrossEntropyBackward(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_Embedding(const OpGraph&, int) override { return of(Role::copy); }
  OpNeeds on_EmbeddingBackward(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_LSTM(const OpGraph& g, int i) override { return lstm(g, g.op(i), 1); }
  OpNeeds on_LSTMBackward(const OpGraph& g, int i) override { return lstm(g, g.op(g.op(i).forward_op), 2); }
  OpNeeds on_SGDMomentumUpdate(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_AdamUpdate(const OpGraph&, int) override { return of(Role::vector); }
  OpNeeds on_AllReduce(const OpGraph&, int) override { return of(Role::ici); }

 private:
  // Convolution as GEMMs over the kernel's taps (mxu_timing.hpp, conv_tap_passes): no im2col
  // is materialised, each pass contracts the input features of the taps it holds. which:
  // 0 forward, 1 data gradient, 2 filter gradient.
  OpNeeds conv(const OpGraph& g, const OpNode& f, int which) const {
    const Shape& xs = g.tensor(f.inputs[0]).desc.shape;
    const Shape& ys = g.tensor(f.outputs[0]).desc.shape;
    const OpAttrs& a = f.attrs;
    int64_t grp = std::max(1, a.groups);
    int64_t out_px = ys[0] * ys[2] * ys[3];
    int64_t cin = xs[1] / grp;
    int64_t co = ys[1] / grp;
    int64_t taps = std::max<int64_t>(1, static_cast<int64_t>(a.kernel_h) * a.kernel_w);
    OpNeeds n = of(Role::mxu);
    // Which operand the array holds (Cloud TPU performance guide, convolutions: "the total
    // batch size should be a multiple of 64 (8 per TPU core), and feature dimension sizes a
    // multiple of 128, or the total batch size a multiple of 1024 (128 per TPU core), and
    // feature dimension sizes a multiple of 8"): below a per-core batch of R the weights are
    // stationary, input and output features on the array's two sides and the batch and
    // spatial positions streamed; from R up the array may hold the activations instead and
    // stream the features. The filter gradient contracts over the positions either way.
    n.weights_stationary = which != 2 && xs[0] < rows_;
    if (which == 0) {
      const TapPasses tp = conv_tap_passes(cin, taps, rows_);
      n.gemm = {out_px, tp.rows, co};
      n.gemm_repeats = grp * tp.passes;
    } else if (which == 1) {
      // dX = sum over taps of dY[out_px, co] x W_tap^T[co, cin], each tap's product added at
      // its (strided) offset in dX: the forward's MACs, the taps' passes over co.
      const TapPasses tp = conv_tap_passes(co, taps, rows_);
      n.gemm = {out_px, tp.rows, cin};
      n.gemm_repeats = grp * tp.passes;
    } else {
      // dW[cin x taps, co] = X^T [cin x taps, out_px] x dY [out_px, co]: contraction over the
      // positions, one GEMM per pass of taps.
      const TapPasses tp = conv_tap_passes(cin, taps, rows_);
      n.gemm = {tp.rows, out_px, co};
      n.gemm_repeats = grp * tp.passes;
      n.chunk_contraction = true;
    }
    return n;
  }
  // Attention: per batch element and head, Q K^T is a [Tq, dh] x [dh, Tk] GEMM and P V a
  // [Tq, Tk] x [Tk, dh] one; both are costed as the first shape (same MACs, and with dh = 64
  // both half-fill a 128-wide array, on the contraction or on the output side). The forward
  // runs 2 such GEMMs, the backward 4; the softmax (per score) runs on the vector unit.
  static OpNeeds attention(const OpGraph& g, const OpNode& op, const OpNode& f, int64_t gemms, double per_score) {
    const Shape& qs = g.tensor(f.inputs[0]).desc.shape;
    const Shape& ks = g.tensor(f.inputs[1]).desc.shape;
    const int64_t heads = std::max<int64_t>(1, f.attrs.heads);
    OpNeeds n = of(Role::mxu);
    n.gemm = {qs[1], qs[2] / heads, ks[1]};
    n.gemm_repeats = gemms * qs[0] * heads;
    n.independent_repeats = true;
    n.anchor_vector_flops = per_score * static_cast<double>(qs[0] * heads * qs[1] * ks[1]);
    (void)op;
    return n;
  }
  // LSTM: per timestep one [batch, in+hidden] x [in+hidden, 4h] GEMM, serial in time.
  static OpNeeds lstm(const OpGraph& g, const OpNode& f, int passes) {
    const Shape& xs = g.tensor(f.inputs[0]).desc.shape;
    OpNeeds n = of(Role::mxu);
    n.gemm = {xs[0], f.attrs.input_size + f.attrs.hidden, 4 * f.attrs.hidden};
    n.gemm_repeats = f.attrs.seq_len * passes;
    return n;
  }

  int64_t rows_;  // the MXU's contraction rows (TpuSpec::mxu_rows)
};

bool is_weight_like(TensorRole r) { return r == TensorRole::weight || r == TensorRole::optimizer_state; }

// TPU memory layout: the two minor dimensions of every array are tiled to the vector
// register shape (sublanes x lanes = 8 x 128), so a feature dimension that is not a multiple
// of 128 and a batch that is not a multiple of 8 are padded in HBM, in VMEM and on the vector
// unit (Cloud TPU performance guide, "Tensor dimensions": feature dimensions are padded to
// multiples of 128, batch to multiples of 8). Images are NCHW in the graph; on the TPU the
// channels are the lane (minor) dimension and the batch the sublane dimension.
double layout_padding(const TensorDesc& d, bool is_weight, int sublanes, int lanes) {
  const Shape& s = d.shape;
  if (s.empty()) return 1.0;
  auto pad = [](int64_t x, int64_t to) { return static_cast<double>(ceil_div(x, to) * to) / static_cast<double>(x); };
  if (s.size() == 1) return s[0] > 0 ? pad(s[0], lanes) : 1.0;
  // Activations: features on lanes, batch on sublanes. Conv weights [Cout, Cin, kh, kw] are
  // laid out [kh, kw, Cin, Cout]: Cout on lanes, Cin on sublanes.
  int64_t lane_dim = s.size() == 4 ? (is_weight ? s[0] : s[1]) : s.back();
  int64_t sub_dim = s.size() == 4 && is_weight ? s[1] : s[0];
  if (lane_dim <= 0 || sub_dim <= 0) return 1.0;
  return pad(lane_dim, lanes) * pad(sub_dim, sublanes);
}

// Row-major tiling: the last dimension on lanes, the one before it on sublanes.
double minor_tiling_padding(const Shape& s, int sublanes, int lanes) {
  auto pad = [](int64_t x, int64_t to) { return static_cast<double>(ceil_div(x, to) * to) / static_cast<double>(x); };
  const int64_t lane_dim = s.back(), sub_dim = s[s.size() - 2];
  if (lane_dim <= 0 || sub_dim <= 0) return 1.0;
  return pad(lane_dim, lanes) * pad(sub_dim, sublanes);
}

// Ops of the Transformer family: their tensors are sequences [N, T, D] and attention scores
// [N, H, Tq, Tk] (or heads [N, H, T, dh]) in row-major layout, not NCHW images.
bool sequence_kind(const OpNode& op) {
  switch (op.kind) {
    case OpKind::Attention:
    case OpKind::AttentionBackward:
    case OpKind::LayerNorm:
    case OpKind::LayerNormBackward:
    case OpKind::Softmax:
    case OpKind::SoftmaxBackward:
    case OpKind::Transpose:
    case OpKind::Scale:
      return true;
    case OpKind::MatMul:
      return op.attrs.batches > 1;
    default:
      return false;
  }
}

// Whether tensor t (rank >= 3) is produced or read by a Transformer-family op. XLA keeps the
// logical minor dimension of such arrays minor: attention scores [N, H, Tq, Tk] tile Tk on
// lanes and Tq on sublanes. The NCHW rule above (channels on lanes) is the convolution layout
// and would put H = 12 heads on 128 lanes, a false 10.7x padding of every score.
bool sequence_layout(const OpGraph& g, int t) {
  const Tensor& tt = g.tensor(t);
  if (tt.desc.shape.size() < 3 || tt.role == TensorRole::weight) return false;
  if (tt.producer >= 0 && sequence_kind(g.op(tt.producer))) return true;
  for (int c : g.consumers(t))
    if (sequence_kind(g.op(c))) return true;
  return false;
}

double layout_padding(const OpGraph& g, int t, int sublanes, int lanes) {
  const Tensor& tt = g.tensor(t);
  if (sequence_layout(g, t)) return minor_tiling_padding(tt.desc.shape, sublanes, lanes);
  bool w = tt.role == TensorRole::weight || tt.role == TensorRole::weight_grad || tt.role == TensorRole::optimizer_state;
  return layout_padding(tt.desc, w, sublanes, lanes);
}

// Bytes of an element in HBM: the tensor's own dtype, or 4 where the stack keeps its 16-bit
// tensors in fp32 and only the MXU multiplies in bf16 (LoweringOptions::fp32_storage).
double stored_elem_bytes(DType t, bool fp32_storage) {
  const int64_t b = dtype_bytes(t);
  return fp32_storage && b == 2 ? 4.0 : static_cast<double>(b);
}

// Bytes of tensor t as read by op (weights in the op's compute type, as models/work.cpp
// counts), with the layout padding above.
double read_bytes(const OpGraph& g, const OpNode& op, int t, const TpuSpec& s, bool fp32_storage) {
  const Tensor& tt = g.tensor(t);
  if (tt.is_view) return 0;
  double pad = layout_padding(g, t, s.vector_sublanes, s.vector_lanes);
  const DType d = tt.role == TensorRole::weight && op.phase != Phase::update ? op.compute_dtype : tt.desc.dtype;
  return static_cast<double>(tt.desc.numel()) * stored_elem_bytes(d, fp32_storage) * pad;
}

double padded_bytes(const OpGraph& g, int t, const TpuSpec& s, bool fp32_storage) {
  const Tensor& tt = g.tensor(t);
  return static_cast<double>(tt.desc.numel()) * stored_elem_bytes(tt.desc.dtype, fp32_storage) *
         layout_padding(g, t, s.vector_sublanes, s.vector_lanes);
}

// Vector work of an op runs on padded vregs too: scale by its largest tensor's padding.
double op_padding(const OpGraph& g, const OpNode& op, const TpuSpec& s) {
  int biggest = -1;
  for (int t : op.outputs)
    if (biggest < 0 || g.tensor(t).desc.numel() > g.tensor(biggest).desc.numel()) biggest = t;
  for (int t : op.inputs)
    if (biggest < 0 || g.tensor(t).desc.numel() > g.tensor(biggest).desc.numel()) biggest = t;
  return biggest < 0 ? 1.0 : layout_padding(g, biggest, s.vector_sublanes, s.vector_lanes);
}

// A view's storage is its source's: follow reshapes back to the tensor that owns the bytes.
int storage_of(const OpGraph& g, int t) {
  for (int guard = 0; guard < 64 && g.tensor(t).is_view && g.tensor(t).producer >= 0; ++guard) {
    const OpNode& p = g.op(g.tensor(t).producer);
    if (p.inputs.empty()) break;
    t = p.inputs[0];
  }
  return t;
}

struct Group {
  int anchor = -1;
  Role role = Role::free;
  std::vector<int> members;
  OpNeeds needs;
};

}  // namespace

int64_t stored_peak_bytes(const GraphTotals& t, Precision precision, bool fp32_storage) {
  if (!fp32_storage || dtype_bytes(activation_dtype(precision)) != 2) return t.peak_bytes;
  const int64_t persistent = t.weight_bytes + t.weight_grad_bytes + t.optimizer_state_bytes + t.low_precision_weight_bytes;
  return 2 * (t.peak_bytes - persistent) + persistent - t.low_precision_weight_bytes;
}

Program lower_step(const OpGraph& g, const TpuSpec& s, const LoweringOptions& o) {
  Classifier cls(s.mxu_rows);
  std::vector<int> order = g.schedule();

  // 1. Fusion (XLA's producer-consumer fusion): an element-wise op joins the fused op that
  // produces its latest input; everything else starts a fused op of its own.
  std::vector<Group> groups;
  std::vector<int> group_of(static_cast<size_t>(g.num_ops()), -1);
  for (int op : order) {
    OpNeeds n = cls.visit(g, op);
    if (n.role == Role::free) continue;
    if (n.role == Role::elementwise) {
      // Join the latest fused op that produces one of its inputs: every other input was
      // produced earlier, so the fused op can still run at that point (XLA fuses by data
      // dependence, not by the order the graph lists ops in).
      int target = -1;
      for (int t : g.op(op).inputs) {
        int p = g.tensor(storage_of(g, t)).producer;
        if (p >= 0) target = std::max(target, group_of[static_cast<size_t>(p)]);
      }
      if (target >= 0) {
        Group& into = groups[static_cast<size_t>(target)];
        if (into.role == Role::mxu || into.role == Role::vector || into.role == Role::elementwise) {
          into.members.push_back(op);
          group_of[static_cast<size_t>(op)] = target;
          continue;
        }
      }
    }
    Group gr;
    gr.anchor = op;
    gr.role = n.role;
    gr.members = {op};
    gr.needs = n;
    groups.push_back(gr);
    group_of[static_cast<size_t>(op)] = static_cast<int>(groups.size()) - 1;
  }

  Program prog;
  const double cyc = s.cycle_s();
  const double vec_ops_per_cycle = static_cast<double>(s.vector_lanes) * s.vector_sublanes * s.vector_alus;
  const double vmem_half = static_cast<double>(s.vector_memory_bytes) / 2;  // double buffering
  std::map<int, int> ready_task;  // storage tensor -> task after which it is in HBM
  std::vector<int> recent_stores;  // store task of each chunk, for the double-buffer window
  int barrier = -1;                // last synchronous all-reduce: later ops start after it

  auto add_task = [&](Task t) {
    prog.tasks.push_back(std::move(t));
    return static_cast<int>(prog.tasks.size()) - 1;
  };

  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& gr = groups[gi];
    const OpNode& anchor = g.op(gr.anchor);
    FusedOp fo;
    fo.name = anchor.name;
    fo.kind = op_kind_name(anchor.kind);
    int op_index = static_cast<int>(prog.ops.size());

    // External reads (once per tensor) and the outputs someone outside the group needs.
    std::set<int> member_set(gr.members.begin(), gr.members.end());
    std::map<int, double> reads;  // storage tensor -> bytes
    double weight_bytes = 0, act_read = 0, write_bytes = 0, vec_flops = 0, transc = 0;
    std::vector<int> written;
    for (int m : gr.members) {
      const OpNode& mo = g.op(m);
      double pad = op_padding(g, mo, s);
      vec_flops += (m == gr.anchor && gr.role == Role::mxu) ? gr.needs.anchor_vector_flops * pad : mo.work.flops * pad;
      transc += mo.work.transcendentals * pad;
      for (int t : mo.inputs) {
        int st = storage_of(g, t);
        int p = g.tensor(st).producer;
        if (p >= 0 && member_set.count(p)) continue;
        if (reads.count(st)) continue;
        double b = read_bytes(g, mo, t, s, o.fp32_storage);
        reads[st] = b;
        if (is_weight_like(g.tensor(st).role)) weight_bytes += b; else act_read += b;
      }
      for (int t : mo.outputs) {
        if (g.tensor(t).is_view) continue;
        bool external = g.consumers(t).empty();
        for (int c : g.consumers(t)) {
          // Consumers through views count as the view's consumers.
          if (!member_set.count(c)) external = true;
        }
        if (external) {
          write_bytes += padded_bytes(g, t, s, o.fp32_storage);
          written.push_back(t);
        }
      }
    }
    act_read *= gr.needs.hbm_passes;

    if (gr.role == Role::infeed) {
      Task t;
      t.unit = Unit::infeed;
      t.op = op_index;
      int id = add_task(t);
      for (int out : anchor.outputs) {
        ready_task[out] = id;
        if (o.real_data) prog.infeed_bytes += g.tensor(out).desc.bytes();
      }
      prog.ops.push_back(fo);
      continue;
    }

    std::vector<int> deps;
    for (const auto& [st, b] : reads) {
      auto it = ready_task.find(st);
      if (it != ready_task.end()) deps.push_back(it->second);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());

    if (gr.role == Role::ici) {
      Task t;
      t.unit = Unit::ici;
      t.bytes = write_bytes;  // the reduced gradient, same size as the local one
      t.deps = deps;
      t.op = op_index;
      // Synchronous collectives (XLA of 2018 ran cross-replica-sum as an ordinary op in the
      // core's program): the all-reduce starts after the op before it and the next op waits.
      if (!s.collectives_async && !recent_stores.empty()) t.deps.push_back(recent_stores.back());
      int id = add_task(t);
      if (!s.collectives_async) barrier = id;
      for (int out : written) ready_task[out] = id;
      prog.ici_bytes += t.bytes;
      fo.hbm_bytes = 0;
      prog.ops.push_back(fo);
      continue;
    }

    // 2. Chunking to VMEM: activations (and weights that do not stay resident) are split into
    // chunks of at most half the vector memory, so chunk i+1 loads while chunk i computes.
    bool weights_resident = weight_bytes <= vmem_half / 2;
    // Only an MXU op reuses a weight across its chunks (every chunk of rows meets the whole
    // weight). Element-wise and vector ops read each weight element once, like an
    // activation: an optimizer update streams w, m and v in the same slices as g. Counting
    // them as re-loaded per chunk made the Adam update of GPT-2's 38.6M-entry token table
    // read it ~30 times over.
    const bool weights_reused = gr.role == Role::mxu;
    if (!weights_reused && !weights_resident) {
      act_read += weight_bytes;
      weight_bytes = 0;
      weights_resident = true;
    }
    double stream_bytes = act_read + write_bytes + (weights_resident ? 0 : weight_bytes);
    int64_t chunks = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(stream_bytes / vmem_half)));
    if (gr.role == Role::mxu) {
      int64_t dim = gr.needs.independent_repeats ? gr.needs.gemm_repeats
                    : gr.needs.chunk_contraction ? gr.needs.gemm.l
                                                 : gr.needs.gemm.p;
      chunks = std::min(chunks, std::max<int64_t>(1, dim));
    }
    fo.chunks = static_cast<int>(chunks);

    double mxu_s_per_chunk = 0, acc_ops = 0;
    if (gr.role == Role::mxu) {
      GemmShape c = gr.needs.gemm;
      int64_t cycles = 0;
      if (gr.needs.independent_repeats) {
        // A chunk holds whole products: splitting each [Tq, dh] x [dh, Tk] GEMM's rows over
        // the chunks instead would reload its stationary operand once per chunk and per
        // repeat, which no compiler does (XLA tiles a batched dot over its batch dimensions).
        cycles = best_gemm_cycles(c, s.mxu_rows, s.mxu_cols, s.mxu_count) * ceil_div(gr.needs.gemm_repeats, chunks);
      } else {
        if (gr.needs.chunk_contraction) c.l = ceil_div(c.l, chunks); else c.p = ceil_div(c.p, chunks);
        cycles = (gr.needs.weights_stationary ? ws_gemm_cycles(c, s.mxu_rows, s.mxu_cols, s.mxu_count)
                                              : best_gemm_cycles(c, s.mxu_rows, s.mxu_cols, s.mxu_count)) *
                 gr.needs.gemm_repeats;
      }
      mxu_s_per_chunk = static_cast<double>(cycles) * cyc;
      // Partial sums of each further K tile are added on the vector unit (one op per output).
      double k_tiles = static_cast<double>(ceil_div(gr.needs.gemm.l, s.mxu_rows));
      acc_ops = static_cast<double>(gr.needs.gemm.p) * gr.needs.gemm.q * gr.needs.gemm_repeats * k_tiles;
      fo.flops = anchor.work.flops;
      prog.mxu_flops += anchor.work.flops;
    }
    double vec_s_total = ((vec_flops + acc_ops) / vec_ops_per_cycle + transc / s.transcendental_per_cycle) * cyc;
    if (gr.role == Role::copy) vec_s_total = 0;
    double load_total = act_read + weight_bytes * (weights_resident ? 1.0 : static_cast<double>(chunks));
    fo.hbm_bytes = load_total + write_bytes;
    prog.hbm_bytes += fo.hbm_bytes;
    double overhead_s = s.op_overhead_us * 1e-6;

    int last_store = -1;
    for (int64_t c = 0; c < chunks; ++c) {
      Task ld;
      ld.unit = Unit::dma_in;
      ld.op = op_index;
      ld.bytes = act_read / chunks + (weights_resident ? (c == 0 ? weight_bytes : 0) : weight_bytes);
      ld.deps = deps;
      if (recent_stores.size() >= 2) ld.deps.push_back(recent_stores[recent_stores.size() - 2]);
      if (barrier >= 0) ld.deps.push_back(barrier);
      int prev = add_task(ld);
      if (gr.role == Role::mxu) {
        Task m;
        m.unit = Unit::mxu;
        m.op = op_index;
        m.seconds = mxu_s_per_chunk + (c == 0 ? overhead_s : 0);
        m.flops = anchor.work.flops / static_cast<double>(chunks);
        m.deps = {prev};
        prev = add_task(m);
      }
      if (gr.role != Role::copy) {
        Task v;
        v.unit = Unit::vector;
        v.op = op_index;
        v.seconds = vec_s_total / chunks + (c == 0 && gr.role != Role::mxu ? overhead_s : 0);
        v.flops = (vec_flops + acc_ops) / static_cast<double>(chunks);
        v.deps = {prev};
        prev = add_task(v);
      }
      Task st;
      st.unit = Unit::dma_out;
      st.op = op_index;
      st.bytes = write_bytes / chunks;
      st.deps = {prev};
      last_store = add_task(st);
      recent_stores.push_back(last_store);
    }
    for (int t : written) ready_task[t] = last_store;
    prog.ops.push_back(fo);
  }
  return prog;
}

}  // namespace xpusim::tpu
