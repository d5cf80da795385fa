// The configuration search of `xpusim plan` (docs/parallel.md): every (dp, tp, pp, virtual
// stages, cp, ep, micro-batch, ZeRO stage, recompute, sequence parallelism) of a job on N GPUs
// that divides evenly, priced in closed form (llm_memory.hpp, llm_time.hpp), the ones that
// fit ranked by tokens/s, the others counted by the reason they fail. Layer costs are cached
// per (micro-batch, tp, cp, SP): a configuration costs a few hundred arithmetic operations.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parallel/llm_memory.hpp"
#include "parallel/llm_time.hpp"

namespace xpusim::parallel {

// Degrees fixed by the caller (a reference row, plan's flags); empty = searched.
struct LlmConstraints {
  std::optional<int> tp, pp, virtual_stages, cp, ep;
  std::optional<int64_t> micro_batch;
  std::optional<ZeroStage> zero;
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;
};

struct LlmSearchOptions {
  int gpus = 1;
  double memory_bytes = 80e9;       // usable per device (capacity less the runtime's reservation)
  LlmConstraints fixed;
  bool tp_across_nodes = false;     // tensor parallelism beyond one node's NVLink fabric
  int max_virtual_stages = 8;
  int keep = 0;                     // ranked candidates kept (0 = all that fit)
};

struct LlmCandidate {
  LlmConfig config;
  LlmMemory memory;
  LlmTime time;
  double tokens_per_s = 0;
  double mfu = 0, hfu = 0;          // model / hardware FLOPs over the GPUs' dense 16-bit peak
};

struct LlmRejection {
  std::string reason;               // "memory", or the field that forbids it ("tp", "global_batch", ...)
  long long count = 0;
  std::string example;              // one configuration and its message
};

struct LlmSearchResult {
  std::vector<LlmCandidate> ranked; // fitting configurations, fastest first
  std::vector<LlmRejection> rejected;  // by reason, sorted by reason
  long long evaluated = 0;          // configurations priced (fitting or not)
  long long enumerated = 0;         // configurations looked at, divisibility failures included
};

// Prices one configuration (no memory check).
LlmCandidate llm_evaluate(const LlmJob& job, const LlmConfig& c, const LlmKernelPricer& k, const LlmNetwork& n);

LlmSearchResult llm_search(const LlmJob& job, const LlmSearchOptions& o, const LlmKernelPricer& k,
                           const LlmNetwork& n);

// "dp8 tp1 pp1 v1 cp1 ep1 mb4 zero3 full sp0": a configuration in one token list.
std::string llm_config_label(const LlmConfig& c);

// What a search (GPU or TPU) collects besides the fitting candidates: per reason, how many
// configurations it rejected and the first one as an example.
class LlmRejections {
 public:
  void add(const std::string& reason, const LlmConfig& c, const std::string& msg);
  // Counts c as enumerated; a configuration llm_config_error refuses is recorded under the
  // field it names and false returned; else it counts as evaluated and true is returned.
  bool admit(const LlmJob& job, const LlmConfig& c, LlmSearchResult& res);
  // Ranks res.ranked (fastest first; ties by the configuration's fields, so the order is
  // deterministic), keeps the first `keep` (0: all) and appends the rejections sorted by reason.
  void finish(LlmSearchResult& res, int keep);

 private:
  std::map<std::string, LlmRejection> by_reason_;
};

}  // namespace xpusim::parallel
