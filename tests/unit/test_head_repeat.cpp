// Grouped-query attention's key/value head repeat (models/head_repeat.hpp), the op the cuda and
// cpu backends now execute (issue 30d): the host loops on hand-derived numbers, which ops are
// recognised as a repeat (and which are not), and the zoo's Llama 3 graph carrying them.
#include <catch2/catch.hpp>

#include <vector>

#include "common/error.hpp"
#include "models/builder.hpp"
#include "models/head_repeat.hpp"
#include "models/training.hpp"
#include "models/zoo.hpp"

using namespace xpusim;

TEST_CASE("head repeat: query head h reads key/value head h / group; the gradient sums the group", "[gqa]") {
  // 1 row, 2 key/value heads of 2 elements, 4 query heads: group 2.
  HeadRepeat h;
  h.rows = 1, h.kv_heads = 2, h.group = 2, h.head_dim = 2;
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> y(8, -1);
  head_repeat_forward(h, x.data(), y.data());
  CHECK(y == std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4});
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> dx(4, -1);
  head_repeat_backward(h, dy.data(), dx.data());
  CHECK(dx == std::vector<float>{1 + 3, 2 + 4, 5 + 7, 6 + 8});
  // Multi-query (one key/value head for 3 query heads), 2 rows of 1-element heads.
  HeadRepeat m;
  m.rows = 2, m.kv_heads = 1, m.group = 3, m.head_dim = 1;
  std::vector<float> ym(6);
  const std::vector<float> xm = {5, 7};
  head_repeat_forward(m, xm.data(), ym.data());
  CHECK(ym == std::vector<float>{5, 5, 5, 7, 7, 7});
  std::vector<float> dxm(2);
  const std::vector<float> dym = {1, 2, 3, 10, 20, 30};
  head_repeat_backward(m, dym.data(), dxm.data());
  CHECK(dxm == std::vector<float>{6, 60});
}

TEST_CASE("head repeat: the builder's repeat and its gradient are recognised, other copies are not", "[gqa]") {
  OpGraph g;
  ModelBuilder b(g, 2, Precision::fp32);
  const int ids = b.sequence_input("ids", 3);
  const int y = b.labels(3);
  const int x = b.embedding(ids, 5, 8, "emb");
  const int k = b.dense(x, 4, false, "k");                // 2 key/value heads of 2
  const int r = repeat_heads(b, k, 8, 4, "k_repeat");      // 4 query heads of 2
  const int c = b.copy_to(x, b.shape(x), 2, "rotate");   // a plain same-shape copy (rotary)
  const int cat = b.concat({r, c}, 2, "cat");             // a true concatenation
  b.softmax_cross_entropy(b.dense(cat, 5, false, "head"), y, "loss");
  CHECK_THROWS_AS(repeat_heads(b, k, 8, 3, "bad"), InternalError);  // 8 is not 3 whole heads
  lower_to_training_step(g);
  int repeats = 0, gradients = 0, others = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    if (op.kind != OpKind::Concat && op.kind != OpKind::Split) continue;
    const auto h = head_repeat_of(g, op);
    if (!h) {
      ++others;
      continue;
    }
    CHECK(h->rows == 6);  // batch 2 x 3 tokens
    CHECK(h->kv_heads == 2);
    CHECK(h->group == 2);
    CHECK(h->head_dim == 2);
    CHECK(h->narrow() == 4);
    CHECK(h->wide() == 8);
    (op.kind == OpKind::Concat ? repeats : gradients) += 1;
  }
  CHECK(repeats == 1);
  CHECK(gradients == 1);
  CHECK(others == 4);  // rotate and cat, forward and backward
}

TEST_CASE("head repeat: Llama 3 8B repeats its 8 key/value heads to 32 query heads in every layer", "[gqa]") {
  GraphOptions o;
  o.batch = 1;
  const OpGraph g = build_graph(find_model("llama3_8b"), o);
  int repeats = 0, gradients = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    const auto h = head_repeat_of(g, g.op(i));
    if (!h) continue;
    CHECK(h->kv_heads == 8);
    CHECK(h->group == 4);
    CHECK(h->head_dim == 128);
    (g.op(i).kind == OpKind::Concat ? repeats : gradients) += 1;
  }
  CHECK(repeats == 2 * 32);  // k and v in each of the 32 layers
  CHECK(gradients == 2 * 32);
}
