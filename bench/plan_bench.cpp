// `xpusim plan` speed: configurations priced per second by the large-model search (one core),
// and the wall time of one whole plan (model, cluster and device loaded, every configuration
// enumerated, priced and ranked). Goal (issue 30): >= 10,000 configurations/s and < 1 s for
// llama3_70b on 1,024 H100s; Calculon, the closed-form reference, takes ~0.5 s per configuration
// (its paper's figure, not measured here).
//   build/bench/xpusim_bench_plan [model] [cluster] [gpus] [global_batch] [seq_len] [reps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/zoo.hpp"
#include "predict/llm_plan.hpp"

int main(int argc, char** argv) {
  using clock = std::chrono::steady_clock;
  xpusim::LlmPlanRequest r;
  r.model = argc > 1 ? argv[1] : "llama3_70b";
  r.cluster = argc > 2 ? argv[2] : "hgx_h100_ib3200";
  r.gpus = argc > 3 ? std::atoi(argv[3]) : 1024;
  r.global_batch = argc > 4 ? std::atoll(argv[4]) : 1024;
  r.seq_len = argc > 5 ? std::atoll(argv[5]) : 8192;
  const int reps = argc > 6 ? std::max(1, std::atoi(argv[6])) : 5;
  r.keep = 10;
  try {
    try {
      (void)xpusim::find_model(r.model);
    } catch (const xpusim::UserError&) {
      if (r.model != "llama3_70b") throw;
      // Before the zoo has it: Llama-3 70B's published shape (Meta's model card / config.json).
      xpusim::LlmShape s;
      s.layers = 80, s.hidden = 8192, s.heads = 64, s.kv_heads = 8, s.ffn_hidden = 28672, s.vocab = 128256;
      s.norm = xpusim::LlmNorm::rms_norm, s.mlp = xpusim::LlmMlp::swiglu, s.position = xpusim::LlmPosition::rotary;
      s.bias = false, s.norm_bias = false, s.tied_embeddings = false;
      r.shape = s;
      std::printf("(llama3_70b not in the zoo: its published shape)\n");
    }
    std::vector<double> wall, rate;
    long long evaluated = 0, enumerated = 0;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = clock::now();
      const xpusim::LlmPlanResult p = xpusim::plan_llm(r);
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      wall.push_back(s);
      rate.push_back(static_cast<double>(p.search.evaluated) / s);
      evaluated = p.search.evaluated, enumerated = p.search.enumerated;
    }
    std::sort(wall.begin(), wall.end());
    std::sort(rate.begin(), rate.end());
    std::printf("plan %s on %d GPUs of %s, batch %lld x %lld tokens: %lld configurations priced (%lld enumerated)\n",
                r.model.c_str(), r.gpus, r.cluster.c_str(), static_cast<long long>(r.global_batch),
                static_cast<long long>(r.seq_len), evaluated, enumerated);
    std::printf("median of %d runs: %.3f s per plan (goal < 1 s), %.0f configurations/s (goal >= 10,000; "
                "Calculon's published ~2/s)\n",
                reps, wall[wall.size() / 2], rate[rate.size() / 2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
