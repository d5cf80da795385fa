// The distributed-training layer (parallel/): collectives on a cluster topology, the parallel
// plan's checks and the data-parallel step composer, with hand-derived numbers.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "models/zoo.hpp"
#include "parallel/collectives.hpp"
#include "parallel/plan.hpp"
#include "parallel/step_composer.hpp"
#include "parallel/topology.hpp"

using namespace xpusim;
using namespace xpusim::parallel;

namespace {
ClusterTopology ring_of(int devices, int per_node) {
  ClusterTopology t;
  t.devices = devices;
  t.devices_per_node = per_node;
  t.intra = Link{10e9, 5e-6};
  t.inter = Link{1e9, 50e-6};
  return t;
}

OpGraph mlp_graph(int replicas) {
  GraphOptions o;
  o.batch = 32;
  o.training_options.replicas = replicas;
  return build_graph(find_model("mnist_mlp"), o);
}
}  // namespace

TEST_CASE("ring all-reduce: 2(n-1)/n of the buffer per link plus 2(n-1) hops", "[parallel][collectives]") {
  // 2 * 7/8 * 100 MB / 10 GB/s = 17.5 ms, plus 14 hops of 5 us.
  CHECK(ring_allreduce_s(100e6, 8, Link{10e9, 5e-6}) == Approx(17.5e-3 + 70e-6));
  CHECK(ring_allreduce_s(100e6, 1, Link{10e9, 5e-6}) == 0);
  CHECK(allreduce_time_s(100e6, ring_of(8, 8)) == Approx(17.5e-3 + 70e-6));
  CHECK(allreduce_time_s(100e6, ring_of(1, 8)) == 0);
  CHECK(allreduce_time_s(0, ring_of(8, 8)) == 0);
  // Two nodes of 8 over 1 GB/s NICs: + 2 * 1/2 * 100 MB / 1 GB/s = 100 ms + 2 hops of 50 us.
  CHECK(allreduce_time_s(100e6, ring_of(16, 8)) == Approx(17.5e-3 + 70e-6 + 0.1 + 100e-6));
  // Three nodes of 4 (12 devices, 4 per node): intra ring of 4: 2 * 3/4 * 100 MB / 10 GB/s =
  // 15 ms + 6 x 5 us; inter ring of 3: 2 * 2/3 * 100 MB / 1 GB/s = 133.3 ms + 4 x 50 us.
  CHECK(ring_of(12, 4).nodes() == 3);
  CHECK(allreduce_time_s(100e6, ring_of(12, 4)) == Approx(15e-3 + 30e-6 + 0.4 / 3 + 200e-6));
}

TEST_CASE("parameter server and gather-on-first exchanges", "[parallel][collectives]") {
  ClusterTopology t = ring_of(4, 4);
  CHECK(parameter_server_pull_s(100e6, t) == 0);  // a ring pulls nothing
  t.collective = Collective::parameter_server;
  // Push 100 MB at 10 GB/s plus one latency; the pull of the weights the same.
  CHECK(allreduce_time_s(100e6, t) == Approx(10e-3 + 5e-6));
  CHECK(parameter_server_pull_s(100e6, t) == Approx(10e-3 + 5e-6));
  // Gather on the first of 4: 2 x 3 buffers through its link, two latencies: 60 ms + 10 us.
  CHECK(gather_on_first_time_s(100e6, t) == Approx(60e-3 + 10e-6));
  CHECK(gather_on_first_time_s(100e6, ring_of(1, 4)) == 0);
}

TEST_CASE("cluster topology from a system: the link is the system's, capped by the device's port",
          "[parallel][topology]") {
  SystemSpec s;
  s.devices_per_host = 8;
  s.intra_host = LinkSpec{Topology::pcie_tree, 50, 2, 0};
  s.inter_host = LinkSpec{Topology::ethernet, 0, 10, 0};
  ClusterTopology t = make_cluster_topology(s, 16, DevicePorts{24, 0}, 0.5);
  CHECK(t.devices == 16);
  CHECK(t.nodes() == 2);
  CHECK(t.local_devices() == 8);
  CHECK(t.intra.bytes_s == Approx(24e9 * 0.5));  // a Gen4 card in a Gen5 server
  CHECK(t.intra.latency_s == Approx(2e-6));
  CHECK(t.inter.bytes_s == Approx(1e-3 * 1e9 * 0.5));  // no network stated: floored, finite
  CHECK(t.inter.latency_s == Approx(10e-6));
  s.intra_host.topology = Topology::nvlink_bridge_pairs;
  CHECK(make_cluster_topology(s, 2, DevicePorts{24, 56.25}, 1.0).intra.bytes_s == Approx(56.25e9));
  CHECK(make_cluster_topology(s, 4, DevicePorts{24, 56.25}, 1.0).intra.bytes_s == Approx(24e9));
  CHECK(std::string(topology_name(Topology::nvlink_hybrid_cube_mesh)) == "nvlink_hybrid_cube_mesh");
}

TEST_CASE("parallel plan: data parallelism composes, other degrees are refused by name", "[parallel][plan]") {
  ParallelPlan p = ParallelPlan::data_parallel(8);
  CHECK(p.devices() == 8);
  CHECK_NOTHROW(check_plan(p));
  CHECK(unsupported_degree(p).empty());
  p.tp = 2;
  CHECK(p.devices() == 16);
  CHECK(unsupported_degree(p) == "tp");
  CHECK_THROWS_WITH(check_plan(p), Catch::Contains("parallel: tp: only data parallelism"));
  p = ParallelPlan::data_parallel(8);
  p.zero = ZeroStage::optimizer;
  CHECK(unsupported_degree(p) == "zero");
  p = ParallelPlan::data_parallel(8);
  p.ep = 3;
  CHECK_THROWS_WITH(check_plan(p), Catch::Contains("ep (3) must divide dp x cp (8)"));
  p = ParallelPlan::data_parallel(0);
  CHECK_THROWS_AS(check_plan(p), FieldError);
}

TEST_CASE("step composer: compute stream, overlapped and gathered gradient exchange", "[parallel][composer]") {
  const OpGraph g = mlp_graph(2);
  int n_compute = 0, n_collective = 0;
  std::vector<PricedOp> ops(static_cast<size_t>(g.num_ops()));
  for (int op : g.schedule()) {
    PricedOp& p = ops[static_cast<size_t>(op)];
    p.collective = g.op(op).kind == OpKind::AllReduce;
    if (p.collective) {
      p.overhead_s = 2e-3;  // a collective of 0 bytes costs its launch only: 2 ms
      ++n_collective;
    } else {
      p.time_s = 1e-3;
      ++n_compute;
    }
  }
  REQUIRE(n_collective > 0);
  const ClusterTopology topo = ring_of(2, 2);
  ComposeOptions o;
  o.comm_overlap = 1.0;
  // Fully hidden collectives: the compute stream runs every compute op back to back, except
  // where an update waits for its gradient's exchange; it never ends before the serial sum.
  const ComposedStep hidden = StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(g, ops);
  CHECK(hidden.comm_busy_s == Approx(n_collective * 2e-3));
  CHECK(hidden.comm_stall_s == 0);
  CHECK(hidden.compute_end_s >= Approx(n_compute * 1e-3));
  CHECK(hidden.device_s() == Approx(std::max(hidden.compute_end_s, hidden.comm_end_s)));
  // Gathered on the first device (Keras multi_gpu_model): nothing overlaps, every collective
  // stalls compute for its whole time, so the step is the plain sum.
  o.strategy = MultiDeviceStrategy::gather_on_first;
  const ComposedStep gathered = StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(g, ops);
  CHECK(gathered.compute_end_s == Approx(n_compute * 1e-3 + n_collective * 2e-3));
  CHECK(gathered.comm_stall_s == Approx(n_collective * 2e-3));
  CHECK(gathered.exposed_comm_s() == Approx(n_collective * 2e-3));
  // A plan the composer cannot compose, and a topology that does not match the plan.
  ParallelPlan tp = ParallelPlan::data_parallel(1);
  tp.tp = 2;
  CHECK_THROWS_AS(StepComposer(tp, topo, o), FieldError);
  CHECK_THROWS_AS(StepComposer(ParallelPlan::data_parallel(4), topo, o), InternalError);
}

// PyTorch DDP's buckets: gradients exchanged together pay the ring's latency and one launch per
// bucket, and the optimizer updates wait for the last bucket. mnist_mlp on 2 devices, a 10 GB/s
// ring with 5 us hops (ring_of): one all-reduce of b bytes takes b / 1e10 + 2 x 5 us.
TEST_CASE("step composer: gradient buckets pay latency and launch once, updates after the last", "[parallel][composer]") {
  const OpGraph g = mlp_graph(2);
  std::vector<PricedOp> ops(static_cast<size_t>(g.num_ops()));
  double total_bytes = 0;
  int n_collective = 0;
  for (int op : g.schedule()) {
    PricedOp& p = ops[static_cast<size_t>(op)];
    p.collective = g.op(op).kind == OpKind::AllReduce;
    if (p.collective) {
      p.collective_bytes = static_cast<double>(g.tensor(g.op(op).inputs[0]).desc.bytes());
      p.overhead_s = 2e-6;
      total_bytes += p.collective_bytes;
      ++n_collective;
    } else {
      p.time_s = 1e-3;
    }
  }
  REQUIRE(n_collective >= 4);
  const ClusterTopology topo = ring_of(2, 2);
  ComposeOptions o;
  const ComposedStep per_tensor = StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(g, ops);
  CHECK(per_tensor.comm_busy_s == Approx(total_bytes / 1e10 + n_collective * (1e-5 + 2e-6)));
  // One bucket holds every gradient: one latency, one launch.
  o.bucket_bytes = 1e12;
  const ComposedStep one = StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(g, ops);
  CHECK(one.comm_busy_s == Approx(total_bytes / 1e10 + 1e-5 + 2e-6));
  double collectives_end = 0;
  for (int op : g.schedule())
    if (ops[static_cast<size_t>(op)].collective) collectives_end = std::max(collectives_end, one.end_s[static_cast<size_t>(op)]);
  for (int op : g.schedule())
    if (g.op(op).phase == Phase::update) CHECK(one.start_s[static_cast<size_t>(op)] >= collectives_end);
  // The bucket's time is shared out by bytes over its gradients.
  double shared = 0;
  for (double t : one.collective_s) shared += t;
  CHECK(shared == Approx(one.comm_busy_s));
  // A bucket smaller than any gradient: every gradient its own bucket, the per-tensor busy time.
  o.bucket_bytes = 1;
  CHECK(StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(g, ops).comm_busy_s ==
        Approx(per_tensor.comm_busy_s));
  // An op outside the update phase that reads an exchanged gradient (here the first update,
  // relabelled) sends the bucket still being filled at once and starts after it.
  OpGraph reader = g;
  int first_update = -1;
  for (int op : reader.schedule())
    if (reader.op(op).phase == Phase::update) {
      first_update = op;
      break;
    }
  REQUIRE(first_update >= 0);
  reader.op_mut(first_update).phase = Phase::backward;
  o.bucket_bytes = 1e12;
  const ComposedStep early = StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(reader, ops);
  double read_ready = 0;
  for (int t : reader.op(first_update).inputs)
    for (int op : reader.schedule())
      if (ops[static_cast<size_t>(op)].collective)
        for (int out : reader.op(op).outputs)
          if (out == t) read_ready = std::max(read_ready, early.end_s[static_cast<size_t>(op)]);
  CHECK(read_ready > 0);
  CHECK(early.start_s[static_cast<size_t>(first_update)] >= read_ready);
  CHECK(early.comm_busy_s > one.comm_busy_s);  // two exchanges: a second latency and launch
  // Keras' gather-on-first ignores buckets (multi_gpu_model has none).
  o.bucket_bytes = 1e12;
  o.strategy = MultiDeviceStrategy::gather_on_first;
  ComposeOptions gather_only;
  gather_only.strategy = MultiDeviceStrategy::gather_on_first;
  CHECK(StepComposer(ParallelPlan::data_parallel(2), topo, o).compose(g, ops).device_s() ==
        Approx(StepComposer(ParallelPlan::data_parallel(2), topo, gather_only).compose(g, ops).device_s()));
}

TEST_CASE("collective efficiency: the stack's, else the fabric's, else the device's", "[parallel][topology]") {
  // Issue 29: a profile stating its collective library wins; a system stating what the era's
  // library reaches over its fabric comes next; the device's (the P100's NCCL 1.x fit) is last.
  CHECK(collective_efficiency(0.5, 0.28, 0.152) == 0.5);
  CHECK(collective_efficiency(0, 0.28, 0.152) == 0.28);
  CHECK(collective_efficiency(0, 0, 0.152) == 0.152);
}

TEST_CASE("server_pcie prices NCCL 2.x rings at its fabric efficiency, staged cards share the host", "[parallel][topology]") {
  const SystemSpec s = find_system("server_pcie");
  // calibrate --system server_pcie,server_pcie_nvlink --objective scaling (configs/systems/server_pcie.yaml).
  REQUIRE(s.intra_host.allreduce_efficiency == 0.258);
  REQUIRE(s.host.staging_gbps == 17.5);
  const double e = collective_efficiency(0, s.intra_host.allreduce_efficiency, 0.152);
  // 8 Gen3 cards with peer-to-peer (Quadro RTX 8000): the card's 12 GB/s port x 0.258 = 3.096 GB/s.
  CHECK(make_cluster_topology(s, 8, DevicePorts{12, 50, true}, e).intra.bytes_s == Approx(3.096e9));
  // 8 RTX 3090 (no peer-to-peer): min(24, 17.5 / 8) = 2.1875 GB/s x 0.258 = 0.564375 GB/s; 2 of
  // them: min(24, 17.5 / 2) = 8.75 GB/s x 0.258 = 2.2575 GB/s.
  CHECK(make_cluster_topology(s, 8, DevicePorts{24, 56.25, false}, e).intra.bytes_s == Approx(0.564375e9));
  CHECK(make_cluster_topology(s, 2, DevicePorts{24, 56.25, false}, e).intra.bytes_s == Approx(2.2575e9));
  // A ring of 8 over 3.096 GB/s moves 100 MB in 2 x 7/8 x 100e6 / 3.096e9 = 56.52 ms, plus 14 hops of 10 us.
  const ClusterTopology t = make_cluster_topology(s, 8, DevicePorts{12, 50, true}, e);
  CHECK(allreduce_time_s(100e6, t) == Approx(2.0 * 7 / 8 * 100e6 / 3.096e9 + 14 * 10e-6));
  CHECK(allreduce_time_s(100e6, t) == Approx(0.056665).epsilon(1e-4));
  // The DGX-1 states no fabric efficiency: its P100 keeps the NCCL 1.x fit (published rows).
  CHECK(find_system("dgx1_nvlink").intra_host.allreduce_efficiency == 0);
}

TEST_CASE("a system's allreduce_efficiency above 1 is one error naming the key", "[parallel][topology]") {
  const std::string path = (std::filesystem::temp_directory_path() / "xpusim_test_bad_fabric.yaml").string();
  {
    std::ofstream f(path);
    f << "name: bad_fabric\ndefault_device: k80\nintra_host:\n  topology: pcie_tree\n  bandwidth_gbps: 12\n"
         "  allreduce_efficiency: 1.5\ninter_host: {}\nhost: {}\n";
  }
  CHECK_THROWS_WITH(load_system_spec(path), Catch::Contains("allreduce_efficiency") && Catch::Contains("[0, 1]"));
  std::filesystem::remove(path);
}
