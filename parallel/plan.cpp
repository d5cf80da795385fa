// The parallel plan's checks: consistent degrees, and only what the composer implements.
#include "parallel/plan.hpp"

#include "common/error.hpp"

namespace xpusim::parallel {

ParallelPlan ParallelPlan::data_parallel(int replicas) {
  ParallelPlan p;
  p.dp = replicas;
  return p;
}

std::string unsupported_degree(const ParallelPlan& p) {
  if (p.tp != 1) return "tp";
  if (p.pp != 1 || p.virtual_stages != 1) return "pp";
  if (p.cp != 1) return "cp";
  if (p.ep != 1) return "ep";
  if (p.zero != ZeroStage::none) return "zero";
  if (p.recompute != Recompute::none) return "recompute";
  return "";
}

void check_plan(const ParallelPlan& p) {
  for (auto [name, v] : {std::pair<const char*, int>{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp},
                         {"virtual_stages", p.virtual_stages}, {"cp", p.cp}, {"ep", p.ep},
                         {"micro_batches", p.micro_batches}})
    if (v < 1) throw FieldError("parallel", std::string(name) + " must be >= 1, got " + std::to_string(v));
  if ((p.dp * p.cp) % p.ep != 0)
    throw FieldError("parallel", "ep (" + std::to_string(p.ep) + ") must divide dp x cp (" +
                                     std::to_string(p.dp * p.cp) + ")");
  const std::string missing = unsupported_degree(p);
  if (!missing.empty())
    throw FieldError("parallel", missing + ": only data parallelism is composed so far (docs/architecture.md, "
                                           "\"Distributed training\")");
}

}  // namespace xpusim::parallel
