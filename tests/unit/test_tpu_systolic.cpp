// The TPU model's checks of itself: the PE-level systolic grid against a bf16-input,
// fp32-accumulate reference GEMM (bit for bit) and against the fast model's tile timing,
// and the SCALE-Sim-compatible mode on hand-computed layers.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/error.hpp"
#include "sim/tpu/mxu_timing.hpp"
#include "sim/tpu/pe_grid.hpp"
#include "sim/tpu/scalesim.hpp"

using namespace xpusim;
using namespace xpusim::tpu;

namespace {

std::vector<float> random_matrix(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("bf16 conversion rounds to nearest even", "[tpu][pe]") {
  CHECK(round_to_bf16(1.0f) == 1.0f);
  // ulp of bf16 at 1 is 2^-7: 1 + 2^-8 is a tie and goes to the even mantissa (1.0),
  // 1 + 3*2^-8 is a tie between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  CHECK(round_to_bf16(1.0f + 0x1p-8f) == 1.0f);
  CHECK(round_to_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
  CHECK(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);  // above the tie: up
  CHECK(round_to_bf16(-1.0f - 3 * 0x1p-8f) == -1.0f - 0x1p-6f);
  CHECK(std::isnan(round_to_bf16(std::nanf(""))));
}

TEST_CASE("PE grid equals the bf16/fp32 reference GEMM bit for bit", "[tpu][pe]") {
  struct Case { int r, c; int64_t p, l, q; };
  // Exact fits, ragged edges and several K and N tiles.
  for (Case k : {Case{4, 4, 5, 4, 4}, Case{4, 4, 9, 11, 6}, Case{8, 8, 17, 8, 8}, Case{16, 16, 3, 40, 20},
                 Case{32, 32, 33, 32, 32}, Case{8, 4, 12, 20, 9}}) {
    auto a = random_matrix(k.p * k.l, 11u + static_cast<uint32_t>(k.p));
    auto b = random_matrix(k.l * k.q, 97u + static_cast<uint32_t>(k.q));
    PeGridResult g = pe_grid_gemm(a, b, k.p, k.l, k.q, k.r, k.c);
    std::vector<float> ref = reference_gemm_bf16(a, b, k.p, k.l, k.q, k.r);
    INFO("array " << k.r << "x" << k.c << " gemm " << k.p << "x" << k.l << "x" << k.q);
    CHECK(bit_equal(g.out, ref));
    // Rounding matters: the same GEMM in plain fp32 differs somewhere.
    std::vector<float> fp32(ref.size(), 0.0f);
    for (int64_t i = 0; i < k.p; ++i)
      for (int64_t j = 0; j < k.q; ++j) {
        float s = 0;
        for (int64_t x = 0; x < k.l; ++x) s += a[static_cast<size_t>(i * k.l + x)] * b[static_cast<size_t>(x * k.q + j)];
        fp32[static_cast<size_t>(i * k.q + j)] = s;
      }
    CHECK_FALSE(bit_equal(fp32, ref));
  }
}

TEST_CASE("PE grid cycles equal the fast model's tile timing", "[tpu][pe]") {
  for (int n : {4, 8, 16, 32}) {
    for (int64_t p : {int64_t{1}, int64_t{n}, int64_t{3 * n + 1}}) {
      auto a = random_matrix(p * n, 3);
      auto b = random_matrix(int64_t{n} * n, 4);
      PeGridResult g = pe_grid_gemm(a, b, p, n, n, n, n);
      CHECK(g.cycles == ws_tile_cycles(n, n, p));   // one tile: 2R + C + P - 2
      CHECK(g.cycles == ws_gemm_cycles({p, n, n}, n, n, 1));
    }
  }
  // Several tiles run cold on the grid: tiles x tile time (the fast model preloads instead).
  auto a = random_matrix(10 * 12, 5);
  auto b = random_matrix(12 * 9, 6);
  PeGridResult g = pe_grid_gemm(a, b, 10, 12, 9, 4, 4);
  CHECK(g.cycles == 3 * 3 * ws_tile_cycles(4, 4, 10));
  // With preloading, each tile after the first costs max(P, R): 8 x 10 + (2*4 + 4 + 10 - 2).
  CHECK(ws_gemm_cycles({10, 12, 9}, 4, 4, 1) == 8 * 10 + 20);
}

TEST_CASE("SCALE-Sim mode matches hand-computed layers", "[tpu][scalesim]") {
  // 8x8 IFMAP, 3x3 filter, 4 channels, 16 filters, stride 1 on an 8x8 array:
  // OFMAP 6x6 -> Np = 36, window Kw = 36, M = 16.
  TopologyLayer l{"conv", 8, 8, 3, 3, 4, 16, 1};
  // ws: Sr = 36, Sc = 16, T = 36: folds 5 x 2; per fold 2*8 + 8 + 36 - 2 = 58; 10*58 - 1.
  LayerCycles ws = scalesim_layer(l, 8, 8, Dataflow::ws);
  CHECK(ws.folds == 10);
  CHECK(ws.cycles == 579);
  CHECK(ws.utilization == Approx(36.0 * 36 * 16 / (64.0 * 579)));
  // os: Sr = 36, Sc = 16, T = 36: folds 10; per fold 8 + 8 + 36 - 2 = 50.
  CHECK(scalesim_layer(l, 8, 8, Dataflow::os).cycles == 499);
  // is: Sr = 36, Sc = 36, T = 16: folds 5 x 5; per fold 16 + 8 + 16 - 2 = 38.
  CHECK(scalesim_layer(l, 8, 8, Dataflow::is).cycles == 949);
  // Stride 2, 7x7 IFMAP, 3x3 filter: OFMAP ceil((7 - 3 + 2) / 2) = 3 -> Np = 9.
  // ws on 32x16: Sr = 27 (3x3x3), Sc = 8, T = 9: 1 fold of 64 + 16 + 9 - 2 = 87.
  CHECK(scalesim_layer({"s2", 7, 7, 3, 3, 3, 8, 2}, 32, 16, Dataflow::ws).cycles == 86);
  // A non-square array: rows fold the window, columns the filters (ws).
  CHECK(scalesim_layer({"fc", 1, 1, 1, 1, 100, 300, 1}, 32, 128, Dataflow::ws).folds == 4 * 3);
}

TEST_CASE("topology CSV: SCALE-Sim format and errors with file:line", "[tpu][scalesim]") {
  auto dir = std::filesystem::temp_directory_path();
  auto good = (dir / "xpusim_topo_good.csv").string();
  {
    std::ofstream f(good);
    f << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
      << "Conv1, 230, 230, 7, 7, 3, 64, 2,\n"
      << "\n"
      << "FC, 1, 1, 1, 1, 2048, 1000, 1,\n";
  }
  auto layers = read_topology_csv(good);
  REQUIRE(layers.size() == 2);
  CHECK(layers[0].name == "Conv1");
  CHECK(layers[0].stride == 2);
  CHECK(layers[1].channels == 2048);
  auto bad = (dir / "xpusim_topo_bad.csv").string();
  {
    std::ofstream f(bad);
    f << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
      << "Conv1, 230, 230, 7, 7, 3, sixty, 2,\n";
  }
  CHECK_THROWS_WITH(read_topology_csv(bad), Catch::Contains(bad + ":2: Num Filter"));
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}
