// costmodel/plan_document.hpp, shared by `xpusim plan` and Python's xpusim.plan: the named
// constraints land in the request (and bad names are field errors), and the time and cost to
// train follow from tokens / (tokens per s x goodput), hand-derived below.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "costmodel/plan_document.hpp"

using namespace xpusim;

TEST_CASE("apply_plan_fixed reads the named constraints", "[plan_document]") {
  LlmPlanRequest req;
  cost::PlanFixedNames n;
  n.tp = 4, n.micro_batch = 2, n.sharding = "zero3", n.recompute = "selective_offloaded", n.sequence_parallel = "false";
  cost::apply_plan_fixed(n, req);
  CHECK(req.fixed.tp == 4);
  CHECK(req.fixed.micro_batch == 2);
  CHECK(req.fixed.zero == parallel::ZeroStage::parameters);
  CHECK(req.fixed.recompute == parallel::Recompute::selective);
  CHECK(req.offload_activations);
  CHECK(req.fixed.sequence_parallel == false);
  CHECK_FALSE(req.fixed.pp.has_value());  // 0 = searched: left unset
}

TEST_CASE("apply_plan_fixed names the bad field", "[plan_document]") {
  auto field_of = [](cost::PlanFixedNames n) {
    LlmPlanRequest req;
    try {
      cost::apply_plan_fixed(n, req);
    } catch (const FieldError& e) {
      return e.field();
    }
    return std::string("(none)");
  };
  cost::PlanFixedNames a, b, c;
  a.sharding = "zero9";
  b.recompute = "most";
  c.sequence_parallel = "maybe";
  CHECK(field_of(a) == "sharding");
  CHECK(field_of(b) == "recompute");
  CHECK(field_of(c) == "sequence_parallel");
}

TEST_CASE("plan_train_cost: seconds = tokens / (tokens/s x goodput), USD at the per-GPU price", "[plan_document]") {
  parallel::LlmCandidate c;
  c.tokens_per_s = 1e5;
  cost::PlanPrice p;
  p.set = true;
  p.usd_per_gpu_h = 2.0;
  // 1e9 tokens at 1e5 tokens/s and goodput 0.5: 2e4 s; 8 GPUs x $2/h x 2e4/3600 h = $88.89.
  const cost::PlanTrainCost t = cost::plan_train_cost(c, p, 8, 1e9, 0.5);
  CHECK(t.seconds == Approx(2e4));
  CHECK(t.usd == Approx(8 * 2.0 * 2e4 / 3600.0));
  p.set = false;
  CHECK(cost::plan_train_cost(c, p, 8, 1e9, 0.5).usd == 0);
}
