#include "devices/cpu/conv_split.hpp"

#include <omp.h>

#include <algorithm>

namespace xpusim::cpu {

namespace {

using dnnl::memory;

size_t round64(size_t b) { return (b + 63) / 64 * 64; }

// Bytes of one image when images are outermost and contiguous (blocked layouts such as
// nchw, nChw16c: no inner block over dimension 0), else 0.
size_t image_bytes(const memory::desc& d) {
  const dnnl_memory_desc_t& c = d.data;
  if (c.format_kind != dnnl_blocked || c.ndims < 1 || c.dims[0] < 1 || c.padded_dims[0] != c.dims[0]) return 0;
  const dnnl_blocking_desc_t& b = c.format_desc.blocking;
  for (int k = 0; k < b.inner_nblks; ++k)
    if (b.inner_idxs[k] == 0) return 0;
  const size_t bytes = static_cast<size_t>(b.strides[0]) * memory::data_type_size(d.data_type());
  return bytes * static_cast<size_t>(c.dims[0]) == d.get_size() ? bytes : 0;
}

memory::desc with_images(const memory::desc& d, int64_t n) {
  dnnl_memory_desc_t c = d.data;
  c.dims[0] = c.padded_dims[0] = n;
  return memory::desc(c);
}

}  // namespace

bool plan_minibatch_split(const dnnl::convolution_backward_weights::primitive_desc& full, bool bias, int threads,
                          const BwdWeightsPdOf& pd_of, MinibatchSplit& out) {
  out = MinibatchSplit{};
  const memory::desc src = full.src_desc(), dst = full.diff_dst_desc();
  const int64_t n = src.dims()[0];
  const int parts = static_cast<int>(std::min<int64_t>(threads, n / 2));  // at least two images each
  if (parts < 2) return false;
  out.src_image_bytes = image_bytes(src);
  out.dst_image_bytes = image_bytes(dst);
  if (out.src_image_bytes == 0 || out.dst_image_bytes == 0) return false;
  out.bias = bias;
  out.weight_floats = full.diff_weights_desc().get_size() / sizeof(float);
  out.bias_floats = bias ? full.diff_bias_desc().get_size() / sizeof(float) : 0;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per thread (run_minibatch_split)
  // oneDNN sizes a primitive's thread partition when the descriptor is created: create the
  // slice primitives for one thread.
  const int was = omp_get_max_threads();
  omp_set_num_threads(1);
  bool ok = true;
  try {
    int64_t begin = 0;
    for (int k = 0; k < parts && ok; ++k) {
      const int64_t count = n / parts + (k < n % parts ? 1 : 0);
      MinibatchSplit::Part p;
      p.n_begin = begin;
      p.src = with_images(src, count);
      p.diff_dst = with_images(dst, count);
      auto pd = pd_of(p.src, p.diff_dst, attr);
      ok = pd.src_desc() == p.src && pd.diff_dst_desc() == p.diff_dst &&
           pd.diff_weights_desc() == full.diff_weights_desc() && (!bias || pd.diff_bias_desc() == full.diff_bias_desc());
      p.diff_weights = pd.diff_weights_desc();
      if (bias) p.diff_bias = pd.diff_bias_desc();
      p.scratchpad = pd.scratchpad_desc();
      p.prim = dnnl::convolution_backward_weights(pd);
      out.parts.push_back(std::move(p));
      begin += count;
    }
  } catch (const dnnl::error&) {
    ok = false;  // no single-threaded primitive for this slice: run the full one
  }
  omp_set_num_threads(was);
  if (!ok) out = MinibatchSplit{};
  return ok;
}

void run_minibatch_split(const MinibatchSplit& plan, const dnnl::engine& eng, const void* src, const void* diff_dst,
                         float* diff_weights, float* diff_bias, const std::function<void*(int, size_t)>& partial) {
  const int parts = static_cast<int>(plan.parts.size());
  const size_t wbytes = round64(plan.weight_floats * sizeof(float)), bbytes = round64(plan.bias_floats * sizeof(float));
  std::vector<float*> w(static_cast<size_t>(parts)), b(static_cast<size_t>(parts));
  std::vector<void*> pad(static_cast<size_t>(parts));
  for (int k = 0; k < parts; ++k) {
    const MinibatchSplit::Part& p = plan.parts[static_cast<size_t>(k)];
    // Thread 0 writes the result in place; the others' partials come first in their buffer.
    const size_t own = k == 0 ? 0 : wbytes + bbytes;
    char* buf = static_cast<char*>(partial(k, own + round64(p.scratchpad.get_size())));
    w[static_cast<size_t>(k)] = k == 0 ? diff_weights : reinterpret_cast<float*>(buf);
    b[static_cast<size_t>(k)] = k == 0 ? diff_bias : reinterpret_cast<float*>(buf + wbytes);
    pad[static_cast<size_t>(k)] = buf + own;
  }
#pragma omp parallel for schedule(static, 1) num_threads(parts)
  for (int k = 0; k < parts; ++k) {
    const MinibatchSplit::Part& p = plan.parts[static_cast<size_t>(k)];
    const auto at = static_cast<size_t>(p.n_begin);
    dnnl::stream s(eng);  // one stream per thread: streams are not shared between threads
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory(p.src, eng, const_cast<char*>(static_cast<const char*>(src)) + at * plan.src_image_bytes)},
        {DNNL_ARG_DIFF_DST,
         memory(p.diff_dst, eng, const_cast<char*>(static_cast<const char*>(diff_dst)) + at * plan.dst_image_bytes)},
        {DNNL_ARG_DIFF_WEIGHTS, memory(p.diff_weights, eng, w[static_cast<size_t>(k)])},
        {DNNL_ARG_SCRATCHPAD, memory(p.scratchpad, eng, pad[static_cast<size_t>(k)])}};
    if (plan.bias) args[DNNL_ARG_DIFF_BIAS] = memory(p.diff_bias, eng, b[static_cast<size_t>(k)]);
    p.prim.execute(s, args);
    s.wait();
  }
  // Sum the partials in thread order (deterministic for a fixed thread count).
  const auto nw = static_cast<int64_t>(plan.weight_floats);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < nw; ++i) {
    float acc = diff_weights[i];
    for (int k = 1; k < parts; ++k) acc += w[static_cast<size_t>(k)][i];
    diff_weights[i] = acc;
  }
  if (plan.bias)
    for (size_t i = 0; i < plan.bias_floats; ++i)
      for (int k = 1; k < parts; ++k) diff_bias[i] += b[static_cast<size_t>(k)][i];
}

}  // namespace xpusim::cpu
