// Sequence-length binning (predict/sequence_bins.hpp): the pair-length counts on corpora whose
// answer can be derived by hand, and a binning loader in predict (LDDL's phase-2 bins in the
// NGC PyTorch profile): steps run at the bins' mean padded length, memory is the longest bin's.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "common/error.hpp"
#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "predict/predict.hpp"
#include "predict/sequence_bins.hpp"
#include "tests/unit/predict_request.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"

using namespace xpusim;
namespace fs = std::filesystem;

TEST_CASE("sequence bins: one-sentence documents of a token or two give pairs of the first bin only",
          "[sequence_bins]") {
  // Each document is one sentence (mean 1 token, at least 1), so each chunk is that sentence
  // and takes its second segment from another such document, which ends after one sentence:
  // [CLS] a [SEP] b [SEP] with a, b >= 1 is 5 tokens or a few more, all in the first bin. A
  // batch pads to its longest sample rounded up to 8: 8 tokens, or 16 when one sample has 9+.
  const SequenceBins one = bert_pair_bins(512, 64, 1, 1, 1);
  REQUIRE(one.share.size() == 8);
  CHECK(one.share[0] == 1.0);
  CHECK(one.mean_sample_tokens >= 5.0);
  CHECK(one.mean_sample_tokens < 8.0);
  CHECK(one.mean_padded_tokens >= 8.0);
  CHECK(one.mean_padded_tokens < 16.0);
  // Batches of 1,000 always hold a sample of 9+ tokens, and now and then one of 17+: 16, or 24.
  const double big = bert_pair_bins(512, 64, 1, 1, 1000).mean_padded_tokens;
  CHECK(big >= 16.0);
  CHECK(big < 24.0);
  CHECK(step_tokens(one) == 8 * static_cast<int64_t>(std::ceil(one.mean_padded_tokens / 8)));
}

TEST_CASE("sequence bins: documents far longer than the maximum give mostly full pairs", "[sequence_bins]") {
  // Chunks reach their target and random second segments rarely run out, so a pair is as long
  // as its document's target: the full 509 + 3 tokens, or for 10 % of documents a target drawn
  // in [2, 509]. Those documents are cut into proportionally more (shorter) pairs, so more than
  // 10 % of pairs are short, but the last bin still holds most of them.
  const SequenceBins b = bert_pair_bins(512, 64, 1e5, 30, 16);
  CHECK(std::accumulate(b.share.begin(), b.share.end(), 0.0) == Approx(1.0));
  CHECK(b.share.back() > 0.6);
  CHECK(b.share.back() < 0.9);
  CHECK(b.mean_sample_tokens <= b.mean_padded_tokens);
  CHECK(step_tokens(b) % 8 == 0);
  CHECK(step_tokens(b) >= b.mean_padded_tokens);
  CHECK(step_tokens(b) <= 512);
  // Huge documents are cut at 64 pairs' worth of tokens: the count stays bounded and the same.
  CHECK(bert_pair_bins(512, 64, 1e9, 30, 16).share.back() > 0.6);
}

TEST_CASE("sequence bins: shorter documents give shorter pairs; bigger batches pad further; deterministic",
          "[sequence_bins]") {
  const SequenceBins short_docs = bert_pair_bins(512, 64, 200, 30, 16);
  const SequenceBins wiki = bert_pair_bins(512, 64, 570, 30, 16);
  const SequenceBins long_docs = bert_pair_bins(512, 64, 2000, 30, 16);
  CHECK(short_docs.mean_padded_tokens < wiki.mean_padded_tokens);
  CHECK(wiki.mean_padded_tokens < long_docs.mean_padded_tokens);
  // Documents of ~570 tokens: most pairs are cut short by a document's end (their own or the
  // random one's), so well under the 512 an unbinned loader pads to.
  CHECK(wiki.mean_padded_tokens > 200);
  CHECK(wiki.mean_padded_tokens < 420);
  // The longest of more samples is longer: 1 <= 4 <= 16 <= 256 per batch, and a batch of one
  // pads only to its own length (rounded up to 8: at most 7 tokens of padding).
  const SequenceBins b1 = bert_pair_bins(512, 64, 570, 30, 1);
  const SequenceBins b4 = bert_pair_bins(512, 64, 570, 30, 4);
  const SequenceBins b256 = bert_pair_bins(512, 64, 570, 30, 256);
  CHECK(b1.share == wiki.share);
  CHECK(b1.mean_padded_tokens < b4.mean_padded_tokens);
  CHECK(b4.mean_padded_tokens < wiki.mean_padded_tokens);
  CHECK(wiki.mean_padded_tokens < b256.mean_padded_tokens);
  CHECK(b1.mean_padded_tokens >= b1.mean_sample_tokens);
  CHECK(b1.mean_padded_tokens < b1.mean_sample_tokens + 7.0);
  // At most the bins' upper edges.
  double edges = 0;
  for (size_t k = 0; k < b256.share.size(); ++k) edges += b256.share[k] * 64.0 * static_cast<double>(k + 1);
  CHECK(b256.mean_padded_tokens <= edges);
  // The same arguments, the same bins (a fixed seed), bit for bit.
  const SequenceBins again = bert_pair_bins(512, 64, 570, 30, 16);
  CHECK(again.share == wiki.share);
  CHECK(again.mean_padded_tokens == wiki.mean_padded_tokens);
  // One bin as wide as the sequence, a batch that always holds a full pair: 512.
  CHECK(bert_pair_bins(512, 512, 570, 30, 100000).mean_padded_tokens == Approx(512).margin(0.01));
  CHECK_THROWS_AS(bert_pair_bins(512, 60, 570, 30, 16), InternalError);  // 60 does not divide 512
  CHECK_THROWS_AS(bert_pair_bins(512, 64, 0, 30, 16), InternalError);
  CHECK_THROWS_AS(bert_pair_bins(512, 64, 570, 30, 0), InternalError);
}

namespace {
PredictRequest bert_phase2(const std::string& framework, DataSource data, int64_t seq_len = 512) {
  PredictRequest r = fixtures::predict_request("a100_sxm4_80gb", 1, "bert_large_pretraining", 16, "tf32", "dgx_a100");
  r.seq_len = seq_len;
  r.global_batch = 4096;  // the recipe's accumulation (256 micro-batches), as the rows
  r.placement.framework = framework;
  r.data = data;
  return r;
}
}  // namespace

TEST_CASE("predict: a binning loader runs 512-token steps at the bins' mean length, memory at the longest",
          "[sequence_bins][predict]") {
  const StepReport binned = predict(bert_phase2("pytorch", DataSource::real));
  const StepReport full = predict(bert_phase2("pytorch", DataSource::synthetic));  // no data, no bins
  REQUIRE(binned.extra.contains("seq_len_step_tokens"));
  CHECK_FALSE(full.extra.contains("seq_len_step_tokens"));
  const auto step_len = binned.extra["seq_len_step_tokens"].get<int64_t>();
  CHECK(step_len % 8 == 0);
  CHECK(step_len < 512);
  CHECK(binned.extra["seq_len_max_tokens"].get<int64_t>() == 512);
  CHECK(binned.extra["seq_bin_tokens"].get<int64_t>() == 64);
  CHECK(binned.extra["seq_bin_batch"].get<int64_t>() == 16);
  // Time: between the step at the mean length alone and the full-length step.
  CHECK(binned.throughput_samples_per_s > 1.2 * full.throughput_samples_per_s);
  PredictRequest at_mean = bert_phase2("pytorch", DataSource::synthetic, step_len);
  CHECK(binned.throughput_samples_per_s == Approx(predict(at_mean).throughput_samples_per_s).epsilon(0.02));
  // Memory: what the longest bin needs, not the mean's.
  CHECK(binned.memory_bytes == full.memory_bytes);
  CHECK(binned.fits_in_memory == full.fits_in_memory);
  // Tokens counted are the samples' own, not their padding.
  CHECK(binned.throughput_tokens_per_s ==
        Approx(binned.throughput_samples_per_s * binned.extra["seq_len_mean_sample_tokens"].get<double>()).epsilon(0.01));
}

TEST_CASE("predict: no bins where the recipe pads to the full length", "[sequence_bins][predict]") {
  // Phase 1 (128 tokens) is not binned in the recipe: the profile lists 512 only.
  CHECK_FALSE(predict(bert_phase2("pytorch", DataSource::real, 128)).extra.contains("seq_len_step_tokens"));
  // The 20.06 container read fixed 512-token samples (pytorch_ngc_2020 clears the bins).
  CHECK_FALSE(predict(bert_phase2("pytorch_ngc_2020", DataSource::real)).extra.contains("seq_len_step_tokens"));
  // A dataset that states no document lengths (SST-2 under bert_large): nothing to bin.
  PredictRequest sst = bert_phase2("pytorch", DataSource::real);
  sst.model = "bert_large";
  CHECK_FALSE(predict(sst).extra.contains("seq_len_step_tokens"));
  // ... unless the request names the corpus (validate passes a row's dataset column).
  sst.dataset = "wikipedia_bookcorpus";
  CHECK(predict(sst).extra.contains("seq_len_step_tokens"));
}

namespace {
struct ScratchDir {
  fs::path dir = fs::temp_directory_path() / ("xpusim_sequence_bins_" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(dir); }
  ~ScratchDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};
}  // namespace

TEST_CASE("sequence bins: bad profile and dataset fields are the file's errors", "[sequence_bins][frameworks]") {
  ScratchDir d;
  const std::string head = "name: binned\nengines: [analytical]\n";
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  const std::string odd = d.write("binned.yaml", head + "sequence_bin_tokens_by_length: {512: 60}\n");
  const std::string e1 = error_of([&] { load_framework_spec(odd); });
  CHECK(e1.find("binned.yaml:3") != std::string::npos);
  CHECK(e1.find("divides the sequence length") != std::string::npos);
  const std::string word = d.write("binned.yaml", head + "sequence_bin_tokens_by_length: {long: 64}\n");
  CHECK(error_of([&] { load_framework_spec(word); }).find("a sequence length must be a whole number") !=
        std::string::npos);
  CHECK(load_framework_spec(d.write("binned.yaml", head + "sequence_bin_tokens_by_length: {512: 64}\n"))
            .sequence_bin_tokens_by_length.at(512) == 64);
  const std::string half =
      d.write("datasets.yaml", "text:\n  train_examples: 10\n  document_tokens_mean: 500\n");
  CHECK(error_of([&] { load_datasets_file(half); }).find("give document_tokens_mean and sentence_tokens_mean together") !=
        std::string::npos);
}

TEST_CASE("validate: a row's dataset column reaches predict as configs/datasets.yaml names it", "[sequence_bins][validation]") {
  const std::string head =
      "source,device,num_devices,setup,framework,model,dataset,batch_per_device,precision,data,metric,value,unit,note\n";
  auto row_with = [&](const std::string& dataset) {
    const auto rows = validation::parse_reference_csv(
        head + "s,a100_sxm4_80gb,1,dgx_a100,pytorch,bert_large," + dataset + ",16,tf32,real,train_throughput,1,sequences/s,\n",
        "ref.csv");
    REQUIRE(rows.size() == 1);
    return validation::request_for_row(rows[0]);
  };
  // The sources' spelling: '+' (and '.', '-') for '_'.
  CHECK(row_with("wikipedia+bookcorpus").dataset == "wikipedia_bookcorpus");
  CHECK(row_with("imagenet").dataset == "imagenet");
  // A name the file does not hold leaves the model's own (SQuAD is not a dataset entry).
  CHECK(row_with("squad_v1.1").dataset.empty());
}
