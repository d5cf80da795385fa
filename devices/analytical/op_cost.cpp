#include "devices/analytical/op_cost.hpp"

#include <algorithm>
#include <cmath>

#include "devices/analytical/gemm_alignment.hpp"
#include "devices/analytical/winograd.hpp"
#include "models/dtype.hpp"

namespace xpusim::analytical {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::none: return "none";
    case OpClass::conv: return "conv";
    case OpClass::gemm: return "gemm";
    case OpClass::recurrent: return "recurrent";
    case OpClass::elementwise: return "elementwise";
    case OpClass::normalization: return "normalization";
    case OpClass::update: return "update";
    case OpClass::communication: return "communication";
  }
  return "?";
}

namespace {
double io_bytes(const OpNode& n) { return static_cast<double>(n.work.bytes_read + n.work.bytes_written); }
}  // namespace

double OpCostModel::memory_seconds(double bytes) const {
  if (r_.llc_bytes > 0 && r_.llc_bytes_s > 0 && bytes <= r_.llc_bytes) return bytes / r_.llc_bytes_s;
  return bytes / r_.memory_bytes_s;
}

OpCost OpCostModel::streaming(const OpGraph& g, int op, OpClass cls, double kernels) const {
  const OpNode& n = g.op(op);
  OpCost c;
  c.cls = cls;
  // A transcendental costs transcendental_flops FLOP slots (device YAML: ~4 on NVIDIA SFUs,
  // ~25 for a vectorised polynomial exp/tanh on a CPU).
  c.compute_s = (n.work.flops + r_.transcendental_flops * n.work.transcendentals) / r_.vector_flops_s;
  c.memory_s = memory_seconds(io_bytes(n));
  c.overhead_s = kernels * r_.op_overhead_s;
  if (r_.cpu.vcpus > 0)
    apply_cpu_threads(c, r_.cpu, eigen_cycles(r_.cpu, 0, n.work.flops + r_.transcendental_flops * n.work.transcendentals, io_bytes(n)));
  return c;
}

OpCost OpCostModel::kernel_gemms(const OpGraph& g, const std::vector<GemmShape>& gemms, bool tensor_ok,
                                 double kernels, double math_scale) const {
  OpCost c;
  c.cls = OpClass::gemm;
  GpuKernelRates kr = r_.kernel;
  kr.math_flops_s = (tensor_ok && r_.tensor_flops_s > 0) ? r_.tensor_flops_s : r_.gemm_flops_s;
  kr.dram_bytes_s = r_.memory_bytes_s;
  const double bytes = static_cast<double>(dtype_bytes(activation_dtype(g.precision)));
  double useful = 0, paid = 0, biggest = -1;
  for (GemmShape s : gemms) {
    s.in_bytes = s.out_bytes = bytes;
    KernelTime t = gemm_kernel_time(s, kr);
    t.math_s /= math_scale;
    c.math_s += t.math_s;
    c.compute_s += t.time_s();
    c.memory_s += t.memory_s;
    c.waves += t.waves;
    const double w = 2.0 * s.m * s.n * s.k * s.batch;
    useful += w;
    paid += t.efficiency > 0 ? w / t.efficiency : w;
    if (w > biggest) biggest = w, c.tile_m = t.tile_m, c.tile_n = t.tile_n;
  }
  c.wave_efficiency = paid > 0 ? useful / paid : 0;
  c.overhead_s = kernels * r_.op_overhead_s;
  return c;
}

OpCost OpCostModel::gemm(const OpGraph& g, int op, double flops, double items, double dmin, double n_out,
                         bool tensor_ok, double kernels, bool per_step) const {
  const OpNode& n = g.op(op);
  OpCost c;
  c.cls = OpClass::gemm;
  const double rate = (tensor_ok && r_.tensor_flops_s > 0) ? r_.tensor_flops_s : r_.gemm_flops_s;
  // A kernel with fewer independent outputs than the device has lanes to fill runs at the
  // fraction it occupies (wave quantisation, smoothed).
  const double fill = r_.fill_items > 0 ? std::min(1.0, items / r_.fill_items) : 1.0;
  // Tiles (cuBLAS/cuDNN use 32..256-wide tiles) run partly empty when a GEMM dimension is
  // small: Cout = 64 or a 1x1 conv's K = Cin = 64 wastes part of every tile and of the
  // K-loop pipeline. A smooth d / (d + d_half) captures it with one constant per device.
  const double shape = r_.gemm_half_dim > 0 ? dmin / (dmin + r_.gemm_half_dim) : 1.0;
  // Kernels tile the output columns (channels) in fixed-width blocks (cuBLAS/cuDNN SGEMM
  // kernels of the Kepler-Volta era use 128-wide threadblock tiles; CUTLASS's default
  // threadblock shape is 128x128): 96 channels in a 128-wide tile run it 3/4 full, 192 channels
  // take two tiles, 75% used. Channel counts that are not multiples of the tile (Inception's
  // 48/80/96/160/192-wide branches) pay for it; ResNet/VGG widths do not.
  double quant = 1.0;
  if (r_.gemm_tile_n > 0 && n_out > 0) quant = n_out / (std::ceil(n_out / r_.gemm_tile_n) * r_.gemm_tile_n);
  c.compute_s = flops / (rate * std::max(fill * shape * quant, 1e-6));
  c.memory_s = memory_seconds(io_bytes(n));
  c.overhead_s = kernels * r_.op_overhead_s;
  if (r_.cpu.vcpus > 0 && !per_step) apply_cpu_threads(c, r_.cpu, eigen_cycles(r_.cpu, flops, 0, io_bytes(n)));
  return c;
}

OpCost OpCostModel::cuda_core_winograd_3x3(const OpGraph& g, const GemmShape& s, bool fused_ok,
                                            double act_elems) const {
  const double flops = 2.0 * s.m * s.n * s.k * s.batch;
  // WINOGRAD_NONFUSED, F(4x4, 3x3), three kernels in turn: an input transform reads x and
  // writes its 6x6 tiles (36/16 = 2.25x the input); 36 batched GEMMs read those and write
  // 2.25x-expanded products, with the multiplies divided by the device's fitted speed-up (4x in
  // theory); an output transform reads the products and writes y. The transforms move
  // 3.25 x (x + y) bytes at DRAM speed; the GEMMs take the longer of their math and their
  // 2.25 x (x + y) bytes. Where channels are few, a pixel carries few multiply-adds per
  // transformed byte and the traffic eats the saving (cnn10's 64-128 channels, issue 31).
  OpCost best = kernel_gemms(g, {s}, false, 3, r_.winograd_speedup);
  const double act = static_cast<double>(dtype_bytes(activation_dtype(g.precision)));
  const double expand = kWinogradNonfused3x3.tile_expansion();  // 2.25
  const double gemm_traffic_s = memory_seconds(expand * act_elems * act);
  // Each transform reads its tensor once and writes (or reads) the expanded tiles: 3.25 x.
  const double transform_s = memory_seconds((expand + 1.0) * act_elems * act);
  best.compute_s = std::max(best.compute_s, gemm_traffic_s) + transform_s;
  best.memory_s = std::max(best.memory_s, gemm_traffic_s) + transform_s;
  best.flops_saved = flops - flops / r_.winograd_speedup;
  // WINOGRAD (fused), F(2x2, 3x3): the transforms stay in shared memory, one kernel, no extra
  // traffic, but at most 36/16 = 2.25x fewer multiplies (Lavin & Gray, CVPR 2016). cuDNN has it
  // for the forward pass and the data gradient only (cudnnConvolutionBwdFilterAlgo_t's
  // WINOGRAD is "not implemented"; the weight gradient has WINOGRAD_NONFUSED alone).
  if (fused_ok) {
    const double fused = std::min(r_.winograd_speedup, kWinogradFused3x3.multiply_reduction());
    OpCost f = kernel_gemms(g, {s}, false, 1, fused);
    f.flops_saved = flops - flops / fused;
    if (f.time_s() < best.time_s()) best = f;
  }
  return best;
}

OpCost OpCostModel::conv(const OpGraph& g, int op) const {
  const OpNode& n = g.op(op);
  const OpNode& f = n.forward_op >= 0 ? g.op(n.forward_op) : n;  // backward ops share the forward geometry
  const OpAttrs& a = f.attrs;
  const Shape& xs = g.tensor(f.inputs[0]).desc.shape;
  const double items = static_cast<double>(g.tensor(f.outputs[0]).desc.numel());
  int64_t cin = xs.size() > 1 ? xs[1] / std::max(1, a.groups) : 1;
  // The first layer of a stack whose input pipeline pads the image's channels (DALI
  // pad_output: RGB + a zero channel, NHWC) convolves the padded tensor: cuDNN's NHWC fp16
  // kernels take C = 4 on the tensor cores, and the FLOPs and bytes are the padded ones
  // (kernel model only; the roofline devices' constants were fitted without it).
  const int pad_to = r_.first_layer_channels_padded_to;
  const int producer = g.tensor(f.inputs[0]).producer;
  const bool padded_input = r_.kernel_model && pad_to > 0 && cin < pad_to && a.groups == 1 && producer >= 0 &&
                            g.op(producer).kind == OpKind::Input;
  if (padded_input) cin = pad_to;
  const Shape& ys = g.tensor(f.outputs[0]).desc.shape;
  // Implicit-GEMM view of the three convolutions (cuDNN): forward M = N*Ho*Wo, N = Cout,
  // K = Cin*kh*kw; backward-data swaps Cin and Cout; backward-filter reduces over N*Ho*Wo.
  const double kk = static_cast<double>(a.kernel_h) * a.kernel_w;
  const double m_px = static_cast<double>(ys[0]) * ys[2] * ys[3];
  const double cout = static_cast<double>(ys[1]) / std::max(1, a.groups);
  double dmin = 0;
  double n_out = 0;  // the implicit GEMM's output columns: Cout forward, Cin for the data gradient
  switch (n.kind) {
    case OpKind::Conv2DBackwardData:
      dmin = std::min({m_px, static_cast<double>(cin), cout * kk});
      n_out = static_cast<double>(cin);
      break;
    case OpKind::Conv2DBackwardFilter:
      dmin = std::min({cout, static_cast<double>(cin) * kk, m_px});
      n_out = cout;
      break;
    default:
      dmin = std::min({m_px, cout, static_cast<double>(cin) * kk});
      n_out = cout;
      break;
  }
  // Tensor cores need channel counts that fill their 8-wide fragments (cuDNN pads or falls
  // back otherwise: the RGB first layer runs on CUDA cores).
  const bool tensor_ok = cin >= 8 || padded_input;
  double flops = n.work.flops;
  // cuDNN's fast algorithms: Winograd for 3x3 and FFT tiling for 5x5, stride 1 only.
  const bool winograd = a.kernel_h == a.kernel_w && (a.kernel_h == 3 || a.kernel_h == 5) && a.stride_h == 1 &&
                        a.stride_w == 1 && a.dilation_h == 1 && a.dilation_w == 1 && a.groups == 1 && cin >= 8;
  const bool on_tensor = tensor_ok && r_.tensor_flops_s > 0;
  // Winograd F(4x4,3x3) needs 4x fewer multiplies in theory (Lavin & Gray, CVPR 2016) and FFT
  // tiling more for 5x5 (Vasilache et al., ICLR 2015); transforms eat part of that, hence one
  // device factor in [1, 4] for both.
  if (r_.kernel_model) {
    // Implicit GEMM per convolution (cuDNN): forward M = N*Ho*Wo, N = Cout, K = Cin*kh*kw;
    // data gradient M = N*H*W, N = Cin, K = Cout*kh*kw; weight gradient M = Cout,
    // N = Cin*kh*kw, K = N*Ho*Wo (split over K); one GEMM per group.
    const double in_px = static_cast<double>(xs[0]) * xs[2] * xs[3];
    GemmShape s;
    s.batch = std::max(1, a.groups);
    // The im2col operand (forward and weight gradient: the input; data gradient: the output
    // gradient) holds each pixel once per filter tap it meets: its distinct share is the
    // tensor's size over the expanded panel's.
    const double x_elems = in_px * static_cast<double>(cin), dy_elems = m_px * cout;
    if (n.kind == OpKind::Conv2DBackwardData) {
      s.m = in_px, s.n = static_cast<double>(cin), s.k = cout * kk;
      s.a_unique = std::min(1.0, dy_elems / (s.m * s.k));
    } else if (n.kind == OpKind::Conv2DBackwardFilter) {
      s.m = cout, s.n = static_cast<double>(cin) * kk, s.k = m_px;
      s.b_unique = std::min(1.0, x_elems / (s.k * s.n));
    } else {
      s.m = m_px, s.n = cout, s.k = static_cast<double>(cin) * kk;
      s.a_unique = std::min(1.0, x_elems / (s.m * s.k));
    }
    // 5x5 (FFT tiling) keeps the one-factor pricing; a 3x3 off the tensor cores is priced per
    // cuDNN algorithm below (cuda_core_winograd_3x3) and autotuning keeps the fastest.
    const bool fft5 = winograd && a.kernel_h == 5;
    const double speedup = fft5 && !on_tensor ? r_.winograd_speedup : 1.0;
    OpCost c = kernel_gemms(g, {s}, tensor_ok, 1, speedup);
    // The multiplies the fast algorithm skips are not executed (achieved FLOP/s stays under
    // the peak: alexnet on a Titan RTX in fp32 reported 17.5 TFLOP/s on a 16.3 card).
    c.flops_saved = n.work.flops - n.work.flops / speedup;
    const bool wino3 = winograd && a.kernel_h == 3 && r_.winograd_speedup > 1;
    if (wino3 && !on_tensor) {
      OpCost w = cuda_core_winograd_3x3(g, s, n.kind != OpKind::Conv2DBackwardFilter, x_elems + dy_elems);
      if (w.time_s() < c.time_s()) c = w;
    }
    // cuDNN autotuning (TensorFlow's TF_CUDNN_USE_AUTOTUNE and PyTorch's cudnn.benchmark) times
    // every algorithm once and keeps the fastest. Where the tensor cores are slow next to the
    // CUDA cores (GeForce Ampere's TF32 runs at its fp32 rate; GeForce fp16 with fp32
    // accumulate at half its twin's), a 3x3 or 5x5 stride-1 convolution may run faster as
    // Winograd/FFT on the CUDA cores than as a tensor-core implicit GEMM (issue 29).
    if (winograd && on_tensor && r_.winograd_speedup > 1) {
      OpCost w = wino3 ? cuda_core_winograd_3x3(g, s, n.kind != OpKind::Conv2DBackwardFilter, x_elems + dy_elems)
                       : kernel_gemms(g, {s}, false, 1, r_.winograd_speedup);
      if (!wino3) w.flops_saved = n.work.flops - n.work.flops / r_.winograd_speedup;
      if (w.time_s() < c.time_s()) c = w;
      // cuDNN's WINOGRAD_NONFUSED algorithm also runs on the tensor cores (cuDNN developer
      // guide: tensor-op math for IMPLICIT_PRECOMP_GEMM and WINOGRAD_NONFUSED, forward and both
      // gradients), 3x3 only. Its three kernels: an input transform writes the 6x6 tiles of
      // F(4x4, 3x3) (36/16 = 2.25x the input), 36 batched GEMMs multiply them, an output
      // transform reads the 2.25x-expanded products back. It pays that traffic, write and read,
      // for both tensors; with many channels the saved multiplies outweigh it (VGG's and
      // ResNet's 256-512-wide 3x3 layers), with few the implicit GEMM stays faster.
      if (a.kernel_h == 3) {
        OpCost t = kernel_gemms(g, {s}, true, 3, r_.winograd_speedup);
        const double act = static_cast<double>(dtype_bytes(activation_dtype(g.precision)));
        const double transform_bytes = 2.0 * kWinogradNonfused3x3.tile_expansion() * (x_elems + dy_elems) * act;
        const double transform_s = memory_seconds(transform_bytes);
        t.compute_s += transform_s;
        t.memory_s += transform_s;
        if (t.time_s() < c.time_s()) {
          c = t;
          c.flops_saved = n.work.flops - n.work.flops / r_.winograd_speedup;
        }
      }
    }
    c.cls = OpClass::conv;
    return c;
  }
  if (winograd && !on_tensor) flops /= r_.winograd_speedup;
  OpCost c = gemm(g, op, flops, items, dmin, n_out, tensor_ok, 1);
  c.cls = OpClass::conv;
  c.flops_saved = n.work.flops - flops;
  return c;
}

OpCost OpCostModel::on_Input(const OpGraph&, int) { return {}; }  // host feed: the engine's infeed model
OpCost OpCostModel::on_Reshape(const OpGraph&, int) { return {}; }  // a view: no kernel
OpCost OpCostModel::on_Conv2D(const OpGraph& g, int op) { return conv(g, op); }
OpCost OpCostModel::on_Conv2DBackwardData(const OpGraph& g, int op) { return conv(g, op); }
OpCost OpCostModel::on_Conv2DBackwardFilter(const OpGraph& g, int op) { return conv(g, op); }

OpCost OpCostModel::on_MatMul(const OpGraph& g, int op) {
  const OpAttrs& a = g.op(op).attrs;
  const bool has_tensor = r_.tensor_flops_s > 0 && r_.matmul_tensor_cores;
  // A leading dimension that is not a multiple of 16 bytes (an LM head over a 50,257-token
  // vocabulary) narrows the tensor-core kernels' operand loads (gemm_alignment.hpp).
  const double access =
      gemm_access_bytes(a, static_cast<double>(dtype_bytes(activation_dtype(g.precision))), r_.gemm_dims_padded_to);
  const bool narrowed = access < kAlignedAccessBytes;
  if (r_.kernel_model) {
    GemmShape s;
    s.m = static_cast<double>(a.m), s.n = static_cast<double>(a.n), s.k = static_cast<double>(a.k);
    s.batch = static_cast<double>(std::max<int64_t>(1, a.batches));
    const bool tensor_ok = a.k >= 8 && a.n >= 8 && a.m >= 8 && r_.matmul_tensor_cores;
    OpCost c;
    if (tensor_ok && r_.tensor_flops_s > 0 && narrowed) {
      // The faster of the tensor-core kernel with narrowed loads and the CUDA cores.
      const OpCost narrow = kernel_gemms(g, {s}, true, 1, access / kAlignedAccessBytes);
      const OpCost cuda_cores = kernel_gemms(g, {s}, false, 1);
      c = narrow.time_s() <= cuda_cores.time_s() ? narrow : cuda_cores;
      c.unaligned = true;
    } else {
      c = kernel_gemms(g, {s}, tensor_ok, 1);
    }
    // A dimension under the tensor cores' 8-wide fragment: cuBLAS pads it to 8 when that is
    // faster, so the time never falls as the batch grows past 8 (issue 34's invariant).
    if (!tensor_ok && has_tensor) {
      GemmShape p = s;
      p.m = std::max(s.m, 8.0), p.n = std::max(s.n, 8.0), p.k = std::max(s.k, 8.0);
      if (OpCost t = kernel_gemms(g, {p}, true, 1); t.time_s() < c.time_s()) c = t;
    }
    return c;
  }
  const double flops = g.op(op).work.flops;
  const bool tensor_ok = a.k >= 8 && a.n >= 8 && a.m >= 8 && r_.matmul_tensor_cores;
  if (a.m < 1 || a.n < 1 || a.k < 1)
    return gemm(g, op, flops, static_cast<double>(a.m * a.n * a.batches), static_cast<double>(std::min({a.m, a.n, a.k})),
                static_cast<double>(a.n), tensor_ok, 1);
  // The time must not fall as M (the batch, in a forward GEMM) grows: cifar10_cnn on an A100
  // in tf32 went 9.915 -> 9.692 ms from batch 2 to 8, and ncf on an H100 from batch 2 to 8.
  // Two effects of a small M did it. (1) A dimension under the tensor cores' 8-wide fragment
  // kept the GEMM on the CUDA cores; cuBLAS pads such a dimension to 8 when that is faster.
  // (2) Below one full wave (fill) the per-output cost is already constant, and the tile
  // shape factor d / (d + d_half) then charged a smaller M again. A kernel for M rows can
  // always run as the kernel for more rows with the extra rows empty: the time at M is the
  // least over the M' >= M worth trying, M itself, 8 (the fragment) and the M where the two
  // small-M penalties end (one wave of outputs, or M no longer the smallest dimension).
  const double m = static_cast<double>(a.m), n = static_cast<double>(a.n), k = static_cast<double>(a.k),
               b = static_cast<double>(a.batches);
  auto at = [&](double mm, bool tensor) {
    const double pm = tensor ? std::max(mm, 8.0) : mm, pn = tensor ? std::max(n, 8.0) : n,
                 pk = tensor ? std::max(k, 8.0) : k;
    // Padding adds multiply-adds of empty rows and columns; the bias work (not a product of
    // M, N and K) stays as counted, or a padded K = batch would charge it 8 / K times.
    const double extra = flops - 2.0 * m * n * k * b;
    return gemm(g, op, 2.0 * pm * pn * pk * b + extra, pm * pn * b, std::min({pm, pn, pk}), pn, tensor, 1);
  };
  auto best_from = [&](bool tensor) {
    OpCost c = at(m, tensor);
    const double pn = tensor ? std::max(n, 8.0) : n, pk = tensor ? std::max(k, 8.0) : k;
    double m_end = std::min(pn, pk);
    if (r_.fill_items > 0) m_end = std::min(m_end, std::ceil(r_.fill_items / (pn * b)));
    for (double mm : {std::max(m, 8.0), std::max(m, m_end)})
      if (mm > m)
        if (OpCost o = at(mm, tensor); o.time_s() < c.time_s()) c = o;
    return c;
  };
  // Narrowed operand loads: the tensor-core price at their rate, or the CUDA cores, whichever is faster.
  if (tensor_ok && has_tensor && narrowed) {
    OpCost narrow = best_from(true);
    narrow.compute_s *= kAlignedAccessBytes / access;
    const OpCost cuda_cores = best_from(false);
    OpCost c = narrow.time_s() <= cuda_cores.time_s() ? narrow : cuda_cores;
    c.unaligned = true;
    return c;
  }
  if (tensor_ok && has_tensor) return best_from(true);
  OpCost c = best_from(false);
  if (has_tensor)
    if (OpCost t = best_from(true); t.time_s() < c.time_s()) c = t;
  return c;
}

OpCost OpCostModel::attention(const OpGraph& g, int op, double gemms, double per_score, double kernels) const {
  const OpNode& n = g.op(op);
  const OpNode& f = n.forward_op >= 0 ? g.op(n.forward_op) : n;
  const Shape& qs = g.tensor(f.inputs[0]).desc.shape;
  const Shape& ks = g.tensor(f.inputs[1]).desc.shape;
  const double heads = static_cast<double>(std::max<int64_t>(1, f.attrs.heads));
  const double dh = static_cast<double>(qs[2]) / heads, tq = static_cast<double>(qs[1]),
               tk = static_cast<double>(ks[1]);
  const double scores = static_cast<double>(qs[0]) * heads * tq * tk;
  const double gemm_flops = gemms * 2.0 * scores * dh;
  if (r_.kernel_model) {
    // Batched GEMMs over batch x heads: forward S = Q K^T [Tq, Tk, dh] and O = P V [Tq, dh, Tk];
    // backward dP = dO V^T, dQ = dS K, dK = dS^T Q, dV = P^T dO.
    const double bh = static_cast<double>(qs[0]) * heads;
    const std::vector<GemmShape> shapes =
        gemms > 2 ? std::vector<GemmShape>{{tq, tk, dh, bh, 2, 2}, {tq, dh, tk, bh, 2, 2}, {tk, dh, tq, bh, 2, 2}, {tk, dh, tq, bh, 2, 2}}
                  : std::vector<GemmShape>{{tq, tk, dh, bh, 2, 2}, {tq, dh, tk, bh, 2, 2}};
    OpCost c = kernel_gemms(g, shapes, dh >= 8 && tq >= 8 && tk >= 8 && r_.matmul_tensor_cores, kernels);
    const double vec = (per_score * scores + r_.transcendental_flops * n.work.transcendentals) / r_.vector_flops_s;
    c.compute_s += vec;
    c.math_s += vec;
    c.memory_s = std::max(c.memory_s, memory_seconds(io_bytes(n)));
    return c;
  }
  OpCost c = gemm(g, op, gemm_flops, scores, std::min({tq, tk, dh}), tk,
                  dh >= 8 && tq >= 8 && tk >= 8 && r_.matmul_tensor_cores, kernels);
  c.compute_s += (per_score * scores + r_.transcendental_flops * n.work.transcendentals) / r_.vector_flops_s;
  return c;
}

OpCost OpCostModel::on_Attention(const OpGraph& g, int op) { return attention(g, op, 2, 5, 3); }
OpCost OpCostModel::on_AttentionBackward(const OpGraph& g, int op) { return attention(g, op, 4, 4, 5); }
OpCost OpCostModel::on_LayerNorm(const OpGraph& g, int op) { return streaming(g, op, OpClass::normalization); }
OpCost OpCostModel::on_LayerNormBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::normalization); }
OpCost OpCostModel::on_Softmax(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_SoftmaxBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Transpose(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Scale(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }

OpCost OpCostModel::on_BatchNorm(const OpGraph& g, int op) { return streaming(g, op, OpClass::normalization); }
OpCost OpCostModel::on_BatchNormBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::normalization); }
OpCost OpCostModel::on_Activation(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_ActivationBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Add(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Mul(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Pool(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_PoolBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Concat(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Split(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_Dropout(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_DropoutBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_SoftmaxCrossEntropy(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_SoftmaxCrossEntropyBackward(const OpGraph& g, int op) {
  return streaming(g, op, OpClass::elementwise);
}
OpCost OpCostModel::on_Embedding(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }
OpCost OpCostModel::on_EmbeddingBackward(const OpGraph& g, int op) { return streaming(g, op, OpClass::elementwise); }

// An LSTM runs its timesteps one after another: per step one gate GEMM and one fused
// pointwise kernel (TF/Keras without cuDNN), each a small kernel that rarely fills the device.
// Overhead: one dispatch for the op plus recurrent_step_overhead per timestep kernel (equal
// to the per-op overhead where every timestep is a framework op).
OpCost OpCostModel::recurrent(const OpGraph& g, int op, int batch_input, double kernels_per_step) const {
  const OpNode& n = g.op(op);
  const OpAttrs& a = n.attrs;
  const double t = static_cast<double>(std::max<int64_t>(1, a.seq_len));
  const double batch = static_cast<double>(g.tensor(n.inputs[static_cast<size_t>(batch_input)]).desc.shape[0]);
  const double gates = 4.0 * static_cast<double>(a.hidden);
  const double dmin = std::min({batch, gates, static_cast<double>(a.input_size + a.hidden)});
  OpCost c = gemm(g, op, n.work.flops, batch * gates, dmin, gates, a.hidden >= 8, 0, true);
  c.compute_s += r_.transcendental_flops * n.work.transcendentals / r_.vector_flops_s;
  c.overhead_s = r_.op_overhead_s + kernels_per_step * t * r_.recurrent_step_s;
  if (r_.cpu.vcpus > 0) {
    // CPU thread pool (cpu_threads.hpp). The input projection x.W of every timestep is one
    // contraction hoisted out of the time loop (Keras' LSTM implementation 0, cuDNN), priced
    // on the threads its work earns; inside the loop each timestep runs `gate_gemms`
    // contractions h.U (the framework's recurrent_gate_gemms: Keras 2.0 one per gate) and the
    // cell math, each sized by Eigen on its own small work, and every step's kernels wake and
    // join those threads.
    const double rec_share = static_cast<double>(a.hidden) / static_cast<double>(std::max<int64_t>(1, a.input_size + a.hidden));
    const double dots = std::max(1.0, r_.cpu.gate_gemms);
    const double gemm_s = c.compute_s - r_.transcendental_flops * n.work.transcendentals / r_.vector_flops_s;
    OpCost hoisted = c, step = c;
    hoisted.overhead_s = step.overhead_s = 0;
    hoisted.compute_s = gemm_s * (1.0 - rec_share);
    apply_cpu_threads(hoisted, r_.cpu, eigen_cycles(r_.cpu, n.work.flops * (1.0 - rec_share), 0, io_bytes(n)));
    step.compute_s = c.compute_s - gemm_s * (1.0 - rec_share);  // h.U and the cell math
    const double cycles = eigen_cycles(r_.cpu, n.work.flops * rec_share / t / dots,
                                       r_.transcendental_flops * n.work.transcendentals / t / dots, io_bytes(n) / t / dots);
    const int threads = apply_cpu_threads(step, r_.cpu, cycles);
    c.compute_s = hoisted.compute_s + step.compute_s;
    c.overhead_s += hoisted.overhead_s;  // the hoisted contraction's own fork/join
    c.overhead_s += kernels_per_step * t * r_.cpu.sync_per_thread_s * threads;
  }
  c.cls = OpClass::recurrent;
  return c;
}
OpCost OpCostModel::on_LSTM(const OpGraph& g, int op) { return recurrent(g, op, 0, 2); }  // in: {x, W, U, b}
OpCost OpCostModel::on_LSTMBackward(const OpGraph& g, int op) { return recurrent(g, op, 1, 3); }  // in: {dy, x, ...}

OpCost OpCostModel::on_SGDMomentumUpdate(const OpGraph& g, int op) { return streaming(g, op, OpClass::update); }
OpCost OpCostModel::on_AdamUpdate(const OpGraph& g, int op) {
  if (r_.unfused_update_kernels <= 0) return streaming(g, op, OpClass::update);
  // A Python loop of tensor ops per parameter (BertAdam: m*=b1, m+=g, v*=b2, v+=g*g, sqrt, +eps,
  // divide, decay term, add, *lr, negate, p+=): each op a launch and a pass over whole
  // tensors, the moments and update round-tripping through DRAM between them. A pass moves an
  // element of the optimizer state's type (inputs {w, grad, m, v}: m's dtype; fp32 in every
  // graph today, 2 bytes for bf16 or fp16 moments).
  OpCost c = streaming(g, op, OpClass::update, r_.unfused_update_kernels);
  if (r_.unfused_update_accesses > 0) {
    const OpNode& n = g.op(op);
    const double elems = static_cast<double>(g.tensor(n.inputs[0]).desc.numel());
    const int state = n.inputs.size() > 2 ? n.inputs[2] : n.inputs[0];
    const double elem_bytes = static_cast<double>(dtype_bytes(g.tensor(state).desc.dtype));
    c.memory_s = memory_seconds(elems * elem_bytes * r_.unfused_update_accesses);
  }
  return c;
}

OpCost OpCostModel::on_AllReduce(const OpGraph& g, int op) {
  OpCost c;
  c.cls = OpClass::communication;
  c.comm_bytes = static_cast<double>(g.tensor(g.op(op).inputs[0]).desc.bytes());
  // Mixed precision: a framework that exchanges gradients in the 16-bit compute type moves
  // half the bytes of the fp32 master gradients (FrameworkSpec::exchange_in_compute_precision).
  const bool mixed =
      g.precision == Precision::mixed_fp16 || g.precision == Precision::mixed_bf16 || g.precision == Precision::fp8;
  if (mixed && r_.exchange_in_compute_precision && g.tensor(g.op(op).inputs[0]).desc.dtype == DType::fp32)
    c.comm_bytes *= 0.5;
  c.overhead_s = r_.op_overhead_s;
  return c;
}

}  // namespace xpusim::analytical
