// Divisibility checks and names of the large-model configuration (llm_plan.hpp).
#include "parallel/llm_plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace xpusim::parallel {

namespace {
std::string num(long long v) { return std::to_string(v); }
}  // namespace

std::string llm_config_error(const LlmJob& job, const LlmConfig& c) {
  const LlmShape& s = job.shape;
  for (auto [name, v] : {std::pair<const char*, long long>{"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp},
                         {"pp_virtual_stages", c.virtual_stages}, {"cp", c.cp}, {"ep", c.ep},
                         {"micro_batch", c.micro_batch}})
    if (v < 1) return std::string(name) + ": must be >= 1, got " + num(v);
  const long long kv = s.kv_heads > 0 ? s.kv_heads : s.heads;
  if (s.heads % c.tp != 0) return "tp: " + num(c.tp) + " does not divide the " + num(s.heads) + " attention heads";
  if (kv % c.tp != 0 && c.tp % kv != 0)
    return "tp: " + num(c.tp) + " does not divide the " + num(kv) + " key/value heads (nor they it)";
  if (c.pp > s.layers) return "pp: " + num(c.pp) + " stages for " + num(s.layers) + " layers (at most one stage per layer)";
  if (c.virtual_stages > 1 && c.pp == 1) return "pp_virtual_stages: interleaving needs pp > 1";
  if (static_cast<long long>(c.pp) * c.virtual_stages > s.layers)
    return "pp_virtual_stages: " + num(c.pp) + " x " + num(c.virtual_stages) + " model chunks for " + num(s.layers) +
           " layers (at most one chunk per layer)";
  // Even stages keep even chunks (Megatron-LM's interleaving needs whole layers per chunk).
  if (s.layers % c.pp == 0 && (s.layers / c.pp) % c.virtual_stages != 0)
    return "pp_virtual_stages: " + num(c.virtual_stages) + " does not divide the " + num(s.layers / c.pp) +
           " layers of a stage";
  if (job.seq_len % c.cp != 0) return "cp: " + num(c.cp) + " does not divide the sequence length " + num(job.seq_len);
  if (c.cp > 1 && (job.seq_len / c.cp) % 2 != 0) return "cp: ring attention needs an even number of tokens per rank";
  if (c.ep > 1 && !s.moe()) return "ep: expert parallelism on a dense model (no experts)";
  if (s.moe() && s.experts % c.ep != 0) return "ep: " + num(c.ep) + " does not divide the " + num(s.experts) + " experts";
  if ((static_cast<long long>(c.dp) * c.cp) % c.ep != 0) return "ep: " + num(c.ep) + " does not divide dp x cp";
  if (c.sequence_parallel && c.tp == 1) return "sequence_parallel: needs tp > 1";
  const long long per_step = c.micro_batch * static_cast<long long>(c.dp);
  if (job.global_batch % per_step != 0)
    return "global_batch: " + num(job.global_batch) + " is not divisible by micro-batch x dp (" + num(c.micro_batch) +
           " x " + num(c.dp) + ")";
  if (c.virtual_stages > 1 && job.micro_batches(c) % c.pp != 0)
    return "pp_virtual_stages: the interleaved schedule needs the micro-batches (" + num(job.micro_batches(c)) +
           ") to be a multiple of pp (" + num(c.pp) + ")";
  return "";
}

namespace {
double blom(int n) {
  const double p = (n - 0.375) / (n + 0.25);
  // Phi^-1(p) by bisection on Phi(x) = erfc(-x / sqrt 2) / 2: 60 halvings of [0, 10] reach
  // double precision, deterministic and cheap next to a configuration's pricing.
  double lo = 0, hi = 10;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}
}  // namespace

double expected_max_std_normal(int n) {
  if (n <= 1) return 0;
  // The search asks for the same few expert-parallel degrees for every configuration.
  static const std::array<double, 257> table = [] {
    std::array<double, 257> t{};
    for (int i = 2; i < 257; ++i) t[static_cast<size_t>(i)] = blom(i);
    return t;
  }();
  return n < 257 ? table[static_cast<size_t>(n)] : blom(n);
}

double moe_rank_load_factor(const LlmShape& s, double tokens_per_rank, int ep) {
  const double C = s.moe() ? s.capacity_factor : 1.0;
  if (!s.moe() || ep <= 1 || tokens_per_rank <= 0) return C;
  const double E = static_cast<double>(s.experts), k = std::min(static_cast<double>(s.top_k), E);
  if (k >= E) return C;  // every token visits every expert: no imbalance
  const double I = 1.0 + expected_max_std_normal(ep) * std::sqrt((E - k) / ((E - 1.0) * tokens_per_rank * k));
  // No rank can hold more than the whole group's routed tokens.
  return std::max(C, std::min(I, static_cast<double>(ep)));
}

const char* zero_stage_name(ZeroStage z) {
  switch (z) {
    case ZeroStage::none: return "none";
    case ZeroStage::optimizer: return "zero1";
    case ZeroStage::gradients: return "zero2";
    case ZeroStage::parameters: return "zero3";
  }
  return "none";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "none";
}

bool parse_zero_stage(const std::string& s, ZeroStage& out) {
  for (ZeroStage z : {ZeroStage::none, ZeroStage::optimizer, ZeroStage::gradients, ZeroStage::parameters})
    if (s == zero_stage_name(z)) return out = z, true;
  if (s == "fsdp") return out = ZeroStage::parameters, true;
  return false;
}

bool parse_recompute(const std::string& s, Recompute& out) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    if (s == recompute_name(r)) return out = r, true;
  return false;
}

}  // namespace xpusim::parallel
