// Enumeration and ranking of parallel configurations (llm_search.hpp).
#include "parallel/llm_search.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <unordered_map>

namespace xpusim::parallel {

namespace {

std::vector<int> divisors_up_to(long long n, long long cap) {
  std::vector<int> d;
  for (long long i = 1; i <= n && i <= cap; ++i)
    if (n % i == 0) d.push_back(static_cast<int>(i));
  return d;
}

template <class T>
std::vector<T> one_or(const std::optional<T>& fixed, std::vector<T> all) {
  return fixed ? std::vector<T>{*fixed} : all;
}

struct LayerKey {
  int64_t mb;
  int tp, cp;
  bool sp;
  bool operator==(const LayerKey& o) const { return mb == o.mb && tp == o.tp && cp == o.cp && sp == o.sp; }
};
struct LayerKeyHash {
  size_t operator()(const LayerKey& k) const {
    return std::hash<int64_t>()(k.mb) ^ (static_cast<size_t>(k.tp) << 20) ^ (static_cast<size_t>(k.cp) << 28) ^
           (k.sp ? 1ull << 40 : 0);
  }
};

class Evaluator {
 public:
  Evaluator(const LlmJob& j, const LlmKernelPricer& k, const LlmNetwork& n) : job_(j), k_(k), n_(n) {}
  LlmCandidate operator()(const LlmConfig& c) {
    const LayerKey key{c.micro_batch, c.tp, c.cp, c.sequence_parallel};
    auto it = cache_.find(key);
    if (it == cache_.end())
      it = cache_.emplace(key, llm_layer_cost(job_, c.micro_batch, c.tp, c.cp, c.sequence_parallel, k_)).first;
    LlmCandidate out;
    out.config = c;
    out.memory = llm_memory(job_, c);
    out.time = llm_step_time(job_, c, it->second, k_, n_);
    const double gpus = c.devices();
    out.tokens_per_s = static_cast<double>(job_.global_batch) * static_cast<double>(job_.seq_len) / out.time.step_s;
    out.mfu = out.time.model_flops / (out.time.step_s * gpus * k_.peak_flops_s);
    out.hfu = out.time.hardware_flops / (out.time.step_s * gpus * k_.peak_flops_s);
    return out;
  }

 private:
  const LlmJob& job_;
  const LlmKernelPricer& k_;
  const LlmNetwork& n_;
  std::unordered_map<LayerKey, LlmLayerCost, LayerKeyHash> cache_;
};

// Faster first; ties broken by the configuration's fields so the order is deterministic.
bool faster(const LlmCandidate& a, const LlmCandidate& b) {
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  const LlmConfig &x = a.config, &y = b.config;
  return std::make_tuple(x.tp, x.pp, x.virtual_stages, x.cp, x.ep, x.micro_batch, static_cast<int>(x.zero),
                         static_cast<int>(x.recompute), x.sequence_parallel) <
         std::make_tuple(y.tp, y.pp, y.virtual_stages, y.cp, y.ep, y.micro_batch, static_cast<int>(y.zero),
                         static_cast<int>(y.recompute), y.sequence_parallel);
}

}  // namespace

std::string llm_config_label(const LlmConfig& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "dp%d tp%d pp%d v%d cp%d ep%d mb%lld %s %s sp%d", c.dp, c.tp, c.pp, c.virtual_stages,
                c.cp, c.ep, static_cast<long long>(c.micro_batch), zero_stage_name(c.zero), recompute_name(c.recompute),
                c.sequence_parallel ? 1 : 0);
  return buf;
}

void LlmRejections::add(const std::string& reason, const LlmConfig& c, const std::string& msg) {
  LlmRejection& r = by_reason_[reason];
  r.reason = reason;
  if (r.count++ == 0) r.example = llm_config_label(c) + ": " + msg;
}

bool LlmRejections::admit(const LlmJob& job, const LlmConfig& c, LlmSearchResult& res) {
  ++res.enumerated;
  const std::string err = llm_config_error(job, c);
  if (!err.empty()) {
    add(err.substr(0, err.find(':')), c, err.substr(err.find(':') + 2));
    return false;
  }
  ++res.evaluated;
  return true;
}

void LlmRejections::finish(LlmSearchResult& res, int keep) {
  std::sort(res.ranked.begin(), res.ranked.end(), faster);
  if (keep > 0 && res.ranked.size() > static_cast<size_t>(keep)) res.ranked.resize(static_cast<size_t>(keep));
  for (auto& [_, r] : by_reason_) res.rejected.push_back(r);
}

LlmCandidate llm_evaluate(const LlmJob& job, const LlmConfig& c, const LlmKernelPricer& k, const LlmNetwork& n) {
  Evaluator ev(job, k, n);
  return ev(c);
}

LlmSearchResult llm_search(const LlmJob& job, const LlmSearchOptions& o, const LlmKernelPricer& k,
                           const LlmNetwork& n) {
  LlmSearchResult res;
  Evaluator ev(job, k, n);
  LlmRejections rejected;
  const LlmShape& s = job.shape;
  const long long tp_cap = o.tp_across_nodes ? o.gpus : std::min(o.gpus, n.devices_per_node);
  const auto tps = one_or<int>(o.fixed.tp, divisors_up_to(o.gpus, tp_cap));
  const auto pps = one_or<int>(o.fixed.pp, divisors_up_to(o.gpus, s.layers));
  const auto cps = one_or<int>(o.fixed.cp, divisors_up_to(o.gpus, 64));
  const auto eps = one_or<int>(o.fixed.ep, s.moe() ? divisors_up_to(s.experts, o.gpus) : std::vector<int>{1});
  const auto zeros = one_or<ZeroStage>(o.fixed.zero, {ZeroStage::none, ZeroStage::optimizer, ZeroStage::gradients,
                                                      ZeroStage::parameters});
  const auto recs = one_or<Recompute>(o.fixed.recompute, {Recompute::none, Recompute::selective, Recompute::full});
  for (int tp : tps)
    for (int pp : pps)
      for (int cp : cps) {
        LlmConfig base;
        base.tp = tp, base.pp = pp, base.cp = cp;
        const long long model_ranks = static_cast<long long>(tp) * pp * cp;
        if (o.gpus % model_ranks != 0) {
          ++res.enumerated;
          rejected.add("gpus", base, "tp x pp x cp does not divide the GPUs");
          continue;
        }
        base.dp = static_cast<int>(o.gpus / model_ranks);
        const long long per_rank = job.global_batch % base.dp == 0 ? job.global_batch / base.dp : 0;
        std::vector<int> vs = o.fixed.virtual_stages ? std::vector<int>{*o.fixed.virtual_stages}
                              : pp > 1 ? divisors_up_to((s.layers + pp - 1) / pp, o.max_virtual_stages)
                                                    : std::vector<int>{1};
        std::vector<int64_t> mbs;
        if (o.fixed.micro_batch)
          mbs = {*o.fixed.micro_batch};
        else
          for (int d : divisors_up_to(std::max(1LL, per_rank), std::max(1LL, per_rank))) mbs.push_back(d);
        std::vector<bool> sps = o.fixed.sequence_parallel ? std::vector<bool>{*o.fixed.sequence_parallel}
                                : tp > 1                  ? std::vector<bool>{false, true}
                                                          : std::vector<bool>{false};
        // Sharding needs more than one replica: with dp x cp = 1 every stage is "none".
        const std::vector<ZeroStage> zs =
            static_cast<long long>(base.dp) * cp > 1 || o.fixed.zero ? zeros : std::vector<ZeroStage>{ZeroStage::none};
        for (int v : vs)
          for (int ep : eps)
            for (int64_t mb : mbs)
              for (bool sp : sps)
                for (ZeroStage z : zs)
                  for (Recompute r : recs) {
                    LlmConfig c = base;
                    c.virtual_stages = v, c.ep = ep, c.micro_batch = mb, c.sequence_parallel = sp, c.zero = z,
                    c.recompute = r;
                    if (!rejected.admit(job, c, res)) continue;
                    LlmCandidate cand = ev(c);
                    if (cand.memory.total() > o.memory_bytes) {
                      char msg[96];
                      std::snprintf(msg, sizeof msg, "needs %.1f GB per GPU, %.1f GB usable",
                                    cand.memory.total() / 1e9, o.memory_bytes / 1e9);
                      rejected.add("memory", c, msg);
                      continue;
                    }
                    res.ranked.push_back(cand);
                  }
      }
  rejected.finish(res, o.keep);
  return res;
}

}  // namespace xpusim::parallel
