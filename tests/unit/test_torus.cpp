// ICI tori, TPU slices and multislice (issue 32): closed-form collectives checked by hand, the
// slice names and shapes of each generation, wraparound on the dimensions the generation closes,
// and the errors for slices and chip counts a generation does not offer.
#include <catch2/catch.hpp>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "parallel/torus.hpp"
#include "predict/predict.hpp"
#include "sim/tpu/slice.hpp"

using namespace xpusim;
using namespace xpusim::parallel;
using namespace xpusim::tpu;

namespace {
TpuSpec gen(const std::string& name) { return load_tpu_spec(config_dir() + "/devices/" + name + ".yaml"); }
}  // namespace

TEST_CASE("torus collectives: rings per dimension, both directions on wrapped ones", "[torus]") {
  Torus t;
  t.dims = {{16, true}, {16, true}};
  t.link_bytes_per_s = 50e9;
  t.hop_latency_s = 2e-6;
  const double B = 256e6;
  // Two wrapped dims, each 2 x 50 GB/s: all-gather moves 255/256 of B through 200 GB/s.
  const auto ag = torus_collective(t, TorusCollective::all_gather, B);
  CHECK(ag.bandwidth_s == Approx(255.0 / 256 * B / 200e9));
  CHECK(ag.latency_s == Approx(30 * 2e-6));  // 15 ring steps per dimension
  CHECK(torus_collective(t, TorusCollective::reduce_scatter, B).seconds == Approx(ag.seconds));
  const auto ar = torus_collective(t, TorusCollective::all_reduce, B);
  CHECK(ar.bandwidth_s == Approx(2 * ag.bandwidth_s));
  CHECK(ar.latency_s == Approx(2 * ag.latency_s));
  // Over one axis only (tensor parallelism along x): 15/16 of B through 100 GB/s.
  CHECK(torus_collective(t, TorusCollective::all_gather, B, {0}).bandwidth_s == Approx(15.0 / 16 * B / 100e9));
  // Without wraparound the dimension is a line: half the bandwidth.
  Torus m = t;
  m.dims = {{16, false}, {16, false}};
  CHECK(torus_collective(m, TorusCollective::all_gather, B).bandwidth_s == Approx(2 * ag.bandwidth_s));
  // One chip, or dimensions of size 1: nothing moves.
  Torus one;
  one.dims = {{1, false}, {1, false}};
  one.link_bytes_per_s = 1;
  CHECK(torus_collective(one, TorusCollective::all_reduce, B).seconds == 0);
  CHECK(t.chips() == 256);
  CHECK(t.diameter_hops() == 16);
  CHECK(m.diameter_hops() == 30);
}

TEST_CASE("multislice all-reduce: ICI inside the slice, the 1/N shard over DCN", "[torus]") {
  const TpuSpec v5e = gen("tpu_v5e");
  const TpuMultislice m = tpu_multislice(v5e, 1024);
  REQUIRE(m.slices == 4);
  CHECK(m.slice.name == "v5litepod-256");
  // 200 Gbit/s per 8-chip host -> 25e9/8 bytes/s per chip, of which dcn_efficiency 0.8 is
  // sustained; one ring step costs dcn_step_latency_us 550 (both tpu_v5e.yaml, docs/tpu-llm.md).
  CHECK(m.dcn.bytes_per_s_per_chip == Approx(200e9 / 8 / 8 * 0.8));
  const double B = 1e9;
  const MultisliceTime t = multislice_all_reduce(m.slice.torus, m.dcn, B);
  CHECK(t.ici.seconds == Approx(torus_collective(m.slice.torus, TorusCollective::all_reduce, B).seconds));
  CHECK(t.dcn.bandwidth_s == Approx(2 * 3.0 / 4 * (B / 256) / (200e9 / 64 * 0.8)));
  CHECK(t.dcn.latency_s == Approx(6 * 550e-6));
  CHECK(t.seconds() == Approx(t.ici.seconds + t.dcn.seconds));
  // One slice: no DCN term.
  CHECK(multislice_all_reduce(tpu_multislice(v5e, 256).slice.torus, tpu_multislice(v5e, 256).dcn, B).dcn.seconds == 0);
}

TEST_CASE("slice names and shapes per generation", "[torus][tpu]") {
  const TpuSpec v5e = gen("tpu_v5e"), v5p = gen("tpu_v5p"), v4 = gen("tpu_v4"), v6e = gen("tpu_v6e"), v2 = gen("tpu_v2");
  // v5e-256 = 16x16 chips, both dimensions wrapped (full pod side).
  const TpuSlice a = tpu_slice(v5e, "v5e-256");
  CHECK(a.shape == std::vector<int>{16, 16});
  CHECK(a.torus.dims[0].wrap);
  CHECK(a.torus.dims[1].wrap);
  CHECK(a.hosts == 32);
  CHECK(tpu_slice(v5e, "v5litepod-256").shape == a.shape);
  CHECK(tpu_slice(v5e, "16x16").name == "v5litepod-256");
  // 8x16: only the 16 side wraps (wraparound on full-size dimensions only).
  const TpuSlice h = tpu_slice(v5e, "v5e-128");
  CHECK(h.shape == std::vector<int>{8, 16});
  CHECK_FALSE(h.torus.dims[0].wrap);
  CHECK(h.torus.dims[1].wrap);
  // v5p-N counts TensorCores: v5p-128 = 64 chips = 4x4x4, a full cube, every side wrapped.
  const TpuSlice p = tpu_slice(v5p, "v5p-128");
  CHECK(p.shape == std::vector<int>{4, 4, 4});
  CHECK(p.chips == 64);
  CHECK(p.cores == 128);
  CHECK(p.hosts == 16);  // docs: 4x4x4 = 16 hosts
  for (const auto& d : p.torus.dims) CHECK(d.wrap);
  const TpuSlice small = tpu_slice(v5p, "v5p-8");
  CHECK(small.shape == std::vector<int>{2, 2, 1});
  for (const auto& d : small.torus.dims) CHECK_FALSE(d.wrap);
  CHECK(tpu_slice(v5p, "16x16x24").chips == 6144);
  CHECK(tpu_slice(v4, "v4-8").shape == std::vector<int>{2, 2, 1});
  CHECK(tpu_slice(v6e, "v6e-256").torus.link_bytes_per_s == 100e9);
  CHECK(tpu_slice(v2, "v2-512").shape == std::vector<int>{16, 16});
}

TEST_CASE("slices and chip counts a generation does not offer are errors naming the field", "[torus][tpu]") {
  const TpuSpec v5e = gen("tpu_v5e"), v5p = gen("tpu_v5p"), v2 = gen("tpu_v2");
  CHECK_THROWS_WITH(tpu_slice(v5e, "v5e-100"), Catch::StartsWith("slice: tpu_v5e offers no slice v5e-100 (the number counts chips)"));
  CHECK_THROWS_WITH(tpu_slice(v5p, "v5p-100"), Catch::StartsWith("slice: tpu_v5p offers no slice v5p-100 (the number counts TensorCores)"));
  CHECK_THROWS_WITH(tpu_slice(v5e, "4x4x4"), Catch::StartsWith("slice: tpu_v5e offers no 4x4x4 slice; offered: v5litepod-1 (1x1)"));
  CHECK_THROWS_WITH(tpu_slice(v5e, "v5p-128"), Catch::StartsWith("slice: 'v5p-128' is not a tpu_v5e slice"));
  CHECK_THROWS_AS(tpu_slice(v5e, "v5e-"), FieldError);
  try {
    tpu_multislice(v5e, 300);
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "count");
    CHECK_THAT(e.message(), Catch::StartsWith("300 tpu_v5e chips are neither a slice nor a multiple of the largest slice"));
  }
  CHECK_THROWS_WITH(tpu_multislice(v5e, 100, "v5e-64"), "count: 100 chips are not a multiple of v5litepod-64 (64 chips)");
  CHECK(tpu_multislice(v5e, 512, "v5e-128").slices == 4);
  CHECK(tpu_multislice(v5p, 128).slice.name == "v5p-256");  // 4x4x8
  CHECK(tpu_multislice(v5p, 12288).slices == 2);            // two 16x16x24 slices
  // v2 has no published data-center network: a multislice is refused.
  CHECK_THROWS_WITH(tpu_multislice(v2, 512), Catch::Contains("no data-center network figure (host_nic_gbps)"));
  CHECK_THROWS_WITH(tpu_multislice(v5e, 0), "count: must be >= 1 chip, got 0");
}

TEST_CASE("predict on a TPU slice prices the all-reduce over the torus and refuses counts that are not slices",
          "[torus][tpu][engine]") {
  PredictRequest r;
  r.model = "mnist_mlp";
  r.batch_per_device = 64;
  r.precision = "bf16";
  r.placement.device = "tpu_v5e";
  r.placement.system = "cloud_tpu_v5e_pod";
  r.placement.count = 256;
  const StepReport one = predict(r);
  CHECK(one.extra.at("slices").get<int64_t>() == 1);
  CHECK(one.extra.at("slice_chips").get<int64_t>() == 256);
  r.placement.count = 1024;  // 4 x v5litepod-256 over DCN: the same step plus the DCN exchange
  const StepReport four = predict(r);
  CHECK(four.extra.at("slices").get<int64_t>() == 4);
  CHECK(four.step_time_s > one.step_time_s);
  r.placement.count = 300;
  try {
    predict(r);
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "count");
    CHECK_THAT(e.message(), Catch::StartsWith("300 tpu_v5e chips are neither a slice"));
  }
  r.placement.device = "tpu_v5p";
  r.placement.system = "cloud_tpu_v5p_pod";
  r.placement.count = 129;  // v5p: 2 cores per chip
  CHECK_THROWS_WITH(predict(r), Catch::StartsWith("count: 129 TensorCores are not whole tpu_v5p chips"));
}
