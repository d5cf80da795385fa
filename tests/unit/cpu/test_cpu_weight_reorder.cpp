// weight_reorder.hpp's hand-written conv weight reorders give oneDNN's reorder bit for bit,
// and decline every pair they do not implement.
#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "devices/cpu/bn_kernel_bf16.hpp"
#include "devices/cpu/weight_reorder.hpp"

using namespace xpusim::cpu;
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

TEST_CASE("fast weight reorders match oneDNN's reorder exactly", "[cpu]") {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  for (const memory::dims& d : {memory::dims{32, 48, 3, 3}, memory::dims{64, 16, 1, 1}}) {
    const memory::desc from(d, dt::f32, tag::ABcd16b16a);
    std::vector<float> src(from.get_size() / sizeof(float));
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (float& v : src) v = nd(rng);
    std::vector<std::pair<dt, tag>> targets{{dt::f32, tag::ABcd16a16b}, {dt::f32, tag::BAcd16a16b}};
    if (bn_bf16_kernel_available()) {
      targets.push_back({dt::bf16, tag::ABcd8b16a2b});
      targets.push_back({dt::bf16, tag::ABcd8a16b2a});
      targets.push_back({dt::bf16, tag::BAcd8a16b2a});
    } else {
      std::cout << "(bf16 weight reorders not checked: no avx512_bf16 on this CPU)\n";
    }
    for (const auto& [type, layout] : targets) {
      const memory::desc to(d, type, layout);
      INFO("dims " << d[0] << "x" << d[1] << "x" << d[2] << "x" << d[3] << " to " << static_cast<int>(layout));
      auto fast = fast_weight_reorder(from, to);
      REQUIRE(fast);
      std::vector<char> want(to.get_size()), got(to.get_size(), 0x55);
      memory ms(from, eng, src.data()), mw(to, eng, want.data());
      dnnl::reorder(ms, mw).execute(strm, ms, mw);
      strm.wait();
      fast(src.data(), got.data());
      CHECK(std::memcmp(want.data(), got.data(), want.size()) == 0);
    }
  }
  // Padded channels, other sources and other targets go to oneDNN.
  CHECK_FALSE(fast_weight_reorder(memory::desc({24, 16, 1, 1}, dt::f32, tag::ABcd16b16a),
                                  memory::desc({24, 16, 1, 1}, dt::f32, tag::ABcd16a16b)));
  CHECK_FALSE(fast_weight_reorder(memory::desc({32, 16, 3, 3}, dt::f32, tag::abcd),
                                  memory::desc({32, 16, 3, 3}, dt::f32, tag::ABcd16a16b)));
  CHECK_FALSE(fast_weight_reorder(memory::desc({32, 16, 3, 3}, dt::f32, tag::ABcd16b16a),
                                  memory::desc({32, 16, 3, 3}, dt::f32, tag::abcd)));
}
