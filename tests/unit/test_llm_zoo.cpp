// The large-language-model zoo (issue 30): parameter counts exact against the published
// figures (Hugging Face num_parameters(), llm-foundry's NumParams, MaxText's README) and, where a
// paper gives only a rounded figure (GPT-3, Megatron-LM, MT-NLG), the closed form against the
// hand derivation and within the figure's rounding; the built graph against the closed form
// (models/llm_shape.hpp); training FLOPs per token against 6N + attention; the new options'
// errors naming their keys.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "common/error.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "models/zoo_seq_len.hpp"
#include "validation/reference_csv.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using xpusim::validation::read_reference_csv;

namespace {

int64_t graph_params(const ModelSpec& m) {
  GraphOptions o;
  o.batch = 1;
  o.training = false;
  return graph_totals(build_graph(m, o)).params;
}

// GPT-2-style decoder (learned positions s, LayerNorm with bias, GELU MLP 4h, biases, tied
// head): per layer qkv 3h^2+3h, out h^2+h, MLP 8h^2+5h, two LayerNorms 4h = 12h^2 + 13h;
// outside the blocks the token and position tables (V + s) h and the final LayerNorm 2h.
// Narayanan et al. 2021's P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) without the final norm.
int64_t gpt_hand(int64_t l, int64_t h, int64_t v, int64_t s) { return 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h; }

struct Rounded {
  const char* model;
  int64_t layers, hidden, vocab;
  double published, unit;  // published figure and its last digit's unit: within half of it
};

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string load_error(const std::string& params, const std::string& heads = "4") {
  // In the temp directory, removed after: a file left in the working directory lands in commits.
  const std::string path = (std::filesystem::temp_directory_path() / "xpusim_llm_zoo_bad_model.yaml").string();
  write_file(path, "name: bad\nfamily: transformer\ndataset: openwebtext\ntask: sequence\ninput: [16]\nclasses: 64\n"
                   "params:\n  vocab: 64\n  hidden: 32\n  layers: 1\n  heads: " + heads + "\n  ffn: 64\n"
                   "  max_positions: 16\n  type_vocab: 0\n  causal: true\n  pre_norm: true\n  pooler: false\n  head: lm\n" +
                       params);
  std::string error;
  try {
    load_model_spec(path);
  } catch (const UserError& e) {
    error = e.what();
  }
  std::filesystem::remove(path);
  return error;
}

}  // namespace

TEST_CASE("LLM zoo: exact published parameter counts, closed form and built graph agree", "[zoo][llm]") {
  // Hugging Face num_parameters() of the released checkpoints and MaxText's printed count.
  const std::vector<std::pair<const char*, int64_t>> exact = {
      {"llama2_7b", 6738415616},   {"llama2_13b", 13015864320},  {"llama2_70b", 68976648192},
      {"llama3_8b", 8030261248},   {"llama3_70b", 70553706496},  {"llama3_405b", 405853388800},
      {"mixtral_8x7b", 46702792704}, {"maxtext_16b", 15831666688}, {"mpt_7b", 6658859008},
  };
  for (const auto& [name, count] : exact) {
    INFO(name);
    const ModelSpec m = find_model(name);
    REQUIRE(m.llm);
    CHECK(m.reference_params == count);
    CHECK(llm_parameter_count(*m.llm) == count);
    CHECK(graph_params(m) == count);
  }
  // Mixtral: 2 of 8 experts per token; each expert is 3 x 4096 x 14336 per layer.
  const ModelSpec mix = find_model("mixtral_8x7b");
  CHECK(llm_active_parameter_count(*mix.llm) == 46702792704 - 32LL * 6 * 3 * 4096 * 14336);
}

TEST_CASE("LLM zoo: MPT counts equal llm-foundry's NumParams of every shared row", "[zoo][llm]") {
  // Each llm-foundry row's note gives the run's NumParams; the learned position table has
  // the run's sequence length rows, so the count grows with seq_len.
  const auto rows = read_reference_csv(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/llm_calibration.csv");
  const std::regex num_params("NumParams ([0-9]+)");
  int checked = 0;
  for (const auto& r : rows) {
    std::smatch mt;
    if (r.model.rfind("mpt_", 0) != 0 || !std::regex_search(r.note, mt, num_params)) continue;
    INFO(r.model << " seq_len " << *r.seq_len);
    ModelSpec m = find_model(r.model);
    apply_seq_len(m, *r.seq_len);
    CHECK(llm_parameter_count(*m.llm) == std::stoll(mt[1].str()));
    if (*r.seq_len <= 4096) CHECK(graph_params(m) == std::stoll(mt[1].str()));
    ++checked;
  }
  CHECK(checked >= 60);
}

TEST_CASE("LLM zoo: rounded published counts (GPT-3, Megatron-LM, MT-NLG) by hand derivation", "[zoo][llm]") {
  const std::vector<Rounded> rounded = {
      // GPT-3 Medium's "350M" is a nominal name: the shape it gives (24 x 1024, 2048 positions,
      // the GPT-2 vocabulary) has 355.9M, as every reproduction counts; checked within 2%.
      {"gpt3_125m", 12, 768, 50257, 125e6, 1e6},        {"gpt3_350m", 24, 1024, 50257, 350e6, 14e6},
      {"gpt3_760m", 24, 1536, 50257, 760e6, 1e6},       {"gpt3_1_3b", 24, 2048, 50257, 1.3e9, 1e8},
      {"gpt3_2_7b", 32, 2560, 50257, 2.7e9, 1e8},       {"gpt3_6_7b", 32, 4096, 50257, 6.7e9, 1e8},
      {"gpt3_13b", 40, 5120, 50257, 13e9, 1e9},         {"gpt3_175b", 96, 12288, 50257, 175e9, 1e9},
      {"megatron_gpt_1_7b", 24, 2304, 51200, 1.7e9, 1e8}, {"megatron_gpt_3_6b", 30, 3072, 51200, 3.6e9, 1e8},
      {"megatron_gpt_7_5b", 36, 4096, 51200, 7.5e9, 1e8}, {"megatron_gpt_18_4b", 40, 6144, 51200, 18.4e9, 1e8},
      {"megatron_gpt_39_1b", 48, 8192, 51200, 39.1e9, 1e8}, {"megatron_gpt_76_1b", 60, 10240, 51200, 76.1e9, 1e8},
      {"megatron_gpt_145_6b", 80, 12288, 51200, 145.6e9, 1e8}, {"megatron_gpt_310_1b", 96, 16384, 51200, 310.1e9, 1e8},
      {"megatron_gpt_529_6b", 105, 20480, 51200, 529.6e9, 1e8}, {"megatron_gpt_1008b", 128, 25600, 51200, 1008e9, 1e9},
      {"megatron_gpt_1t", 128, 25600, 51200, 1e12, 1e11},  {"megatron_gpt_22b", 48, 6144, 51200, 22e9, 1e9},
      {"mt_nlg_530b", 105, 20480, 51200, 530e9, 1e9},
  };
  for (const auto& r : rounded) {
    INFO(r.model);
    const ModelSpec m = find_model(r.model);
    REQUIRE(m.llm);
    const int64_t n = llm_parameter_count(*m.llm);
    CHECK(n == gpt_hand(r.layers, r.hidden, r.vocab, 2048));
    CHECK(std::abs(static_cast<double>(n) - r.published) <= r.unit / 2);
    if (r.layers <= 40) CHECK(graph_params(m) == n);  // the built graph (the large ones: same builder)
  }
  // MaxText scales without a printed count: emb d, 64 or 128 heads of 128 (q = kv), SwiGLU f,
  // RMSNorm, untied: per layer 4 d (heads 128) + 3 d f + 2 d; outside 2 V d + d.
  auto maxtext = [](int64_t l, int64_t d, int64_t heads, int64_t f) {
    return l * (4 * d * heads * 128 + 3 * d * f + 2 * d) + 2 * 32000 * d + d;
  };
  CHECK(llm_parameter_count(*find_model("maxtext_16b").llm) == maxtext(32, 4096, 64, 28672));
  CHECK(llm_parameter_count(*find_model("maxtext_32b").llm) == maxtext(32, 8192, 64, 28672));
  CHECK(llm_parameter_count(*find_model("maxtext_64b").llm) == maxtext(64, 8192, 64, 28672));
  CHECK(llm_parameter_count(*find_model("maxtext_128b").llm) == maxtext(64, 8192, 128, 57344));
  CHECK(graph_params(find_model("maxtext_128b")) == maxtext(64, 8192, 128, 57344));
}

TEST_CASE("LLM zoo: every model the LLM reference rows name is in the zoo", "[zoo][llm]") {
  for (const char* f : {"/reference/llm_calibration.csv", "/reference/tpu_llm_calibration.csv"})
    for (const auto& r : read_reference_csv(std::string(XPUSIM_TEST_DATA_DIR) + f)) {
      INFO(r.model);
      ModelSpec m = find_model(r.model);
      CHECK(m.llm);
    }
}

TEST_CASE("LLM zoo: training FLOPs per token equal 6N + 12 l s d_attn", "[zoo][llm]") {
  // The training step's matmuls: 6 per parameter a token passes through (forward 2, backward
  // 4), except the tables that are gathered (token table when untied, position table), plus
  // attention's QK^T and PV (forward 4 s d_attn per token and layer, backward twice that; the
  // causal mask counted dense, as the unfused kernels compute it). The whole step adds the
  // elementwise ops, norms, softmax, loss and Adam: a few percent at these widths.
  for (const char* name : {"gpt3_1_3b", "mpt_7b", "llama2_7b", "llama3_8b", "mixtral_8x7b", "maxtext_16b"}) {
    INFO(name);
    ModelSpec m = find_model(name);
    apply_seq_len(m, 2048);
    const LlmShape& s = *m.llm;
    GraphOptions o;
    o.batch = 1;
    o.precision = Precision::mixed_bf16;
    OpGraph g = build_graph(m, o);
    double matmul = 0, total = 0;  // matmul: the dense layers' and attention's products
    for (int i = 0; i < g.num_ops(); ++i) {
      const OpKind k = g.op(i).kind;
      total += g.op(i).work.flops;
      if (k == OpKind::MatMul || k == OpKind::Attention || k == OpKind::AttentionBackward) matmul += g.op(i).work.flops;
    }
    const double tokens = 2048;
    const double gathered = static_cast<double>(s.max_positions * s.hidden + (s.tied_embeddings ? 0 : s.vocab * s.hidden));
    const double n = static_cast<double>(llm_active_parameter_count(s)) - gathered;
    const double expected = 6 * n + 12.0 * s.layers * tokens * static_cast<double>(s.attention_width());
    // Within 0.1%: biases add one FLOP per output (and one per bias gradient), the attention
    // ops 9 per score for the softmax and its gradient (9 H s per token and layer, vs 12 s d_attn).
    CHECK(matmul / tokens == Approx(expected).epsilon(0.001));
    // The whole step: more than the matmuls, by at most 5%.
    CHECK(total / tokens > expected);
    CHECK(total / tokens < 1.05 * expected);
  }
}

TEST_CASE("LLM zoo: new transformer options reject bad values naming the key", "[zoo][llm]") {
  CHECK(load_error("  kv_heads: 3\n").find("params.kv_heads: must divide heads (4)") != std::string::npos);
  CHECK(load_error("  top_k: 2\n").find("params.top_k: is a mixture-of-experts option") != std::string::npos);
  CHECK(load_error("  capacity_factor: 1.25\n").find("params.capacity_factor: is a mixture-of-experts option") !=
        std::string::npos);
  CHECK(load_error("  experts: 4\n  top_k: 5\n  bias: false\n").find("params.top_k: must be at most experts") !=
        std::string::npos);
  CHECK(load_error("  experts: 4\n").find("params.bias: must be false with experts > 1") != std::string::npos);
  CHECK(load_error("  norm: rms_norm\n  norm_bias: true\n").find("params.norm_bias: an RMSNorm has no bias") !=
        std::string::npos);
  CHECK(load_error("  norm: batch_norm\n").find("params.norm") != std::string::npos);
  CHECK(load_error("", "5").find("params.heads: must divide hidden") != std::string::npos);
  CHECK(load_error("  head_dim: 16\n", "5").empty());  // 5 heads of 16: q is 80 wide, as MaxText's 16B
  CHECK(load_error("  kv_heads: 2\n  mlp: swiglu\n  position: rotary\n  norm: rms_norm\n").empty());
}

TEST_CASE("LLM zoo: the Llama graph has RMSNorms without beta, GQA copies, rotary and no position table", "[zoo][llm]") {
  GraphOptions o;
  o.batch = 1;
  o.training = false;
  OpGraph g = build_graph(find_model("llama3_8b"), o);
  int norms = 0, rms = 0, kv_repeats = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    if (op.kind == OpKind::LayerNorm) {
      ++norms;
      rms += op.attrs.rms && op.inputs.size() == 2;
    }
    if (op.name.find(".attn.k_repeat") != std::string::npos) {
      ++kv_repeats;
      CHECK(g.tensor(op.inputs[0]).desc.shape.back() == 8 * 128);   // 8 kv heads
      CHECK(g.tensor(op.outputs[0]).desc.shape.back() == 32 * 128);  // 32 query heads
    }
    CHECK(op.name.find("embeddings.position") == std::string::npos);
  }
  CHECK(norms == 2 * 32 + 1);
  CHECK(rms == norms);
  CHECK(kv_repeats == 32);
}

TEST_CASE("LLM zoo: a sequence length sets a learned table that follows it (MPT) and not a fixed one", "[zoo][llm]") {
  ModelSpec mpt = find_model("mpt_125m");
  apply_seq_len(mpt, 8192);
  CHECK(mpt.llm->max_positions == 8192);
  ModelSpec gpt = find_model("gpt3_125m");
  apply_seq_len(gpt, 1024);
  CHECK(gpt.llm->max_positions == 2048);  // the table stays the model's
  CHECK(find_model("llama2_7b").llm->max_positions == 0);  // rotary: no table
  CHECK(find_model("gpt2").llm.has_value());  // a causal LM head: planned like the others
  CHECK_FALSE(find_model("bert_base").llm.has_value());  // an encoder: not a causal LM
}

TEST_CASE("LLM zoo: a 405B training graph builds in well under two seconds", "[zoo][llm]") {
  const ModelSpec m = find_model("llama3_405b");
  GraphOptions o;
  o.batch = 1;
  o.precision = Precision::mixed_bf16;
  const auto t0 = std::chrono::steady_clock::now();
  OpGraph g = build_graph(m, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(g.num_ops() < 40 * 126 * 3);  // per-layer graph: tens of ops per block
  CHECK(s < 2.0);
}

TEST_CASE("fp8: one-byte storage, GEMMs in fp8 with bf16 activations, refused where a device lacks it", "[zoo][llm]") {
  Precision p;
  REQUIRE(parse_precision("fp8", p));
  CHECK(p == Precision::fp8);
  CHECK(std::string(precision_name(p)) == "fp8");
  CHECK(dtype_bytes(DType::fp8) == 1);
  CHECK(activation_dtype(Precision::fp8) == DType::bf16);
  GraphOptions o;
  o.batch = 1;
  o.training = false;
  o.precision = Precision::fp8;
  OpGraph g = build_graph(find_model("tiny_transformer"), o);
  int fp8_gemms = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    if (op.kind != OpKind::MatMul) continue;
    const bool has_weight = g.tensor(op.inputs[1]).role == TensorRole::weight;
    CHECK((op.compute_dtype == DType::fp8) == has_weight);  // attention's products stay bf16
    fp8_gemms += has_weight;
    for (int t : op.outputs) CHECK(g.tensor(t).desc.dtype == DType::bf16);
  }
  CHECK(fp8_gemms == 2 * 6 + 1);  // q, k, v, out, ffn in and out per layer; the tied LM head
}
