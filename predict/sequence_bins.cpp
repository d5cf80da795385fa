#include "predict/sequence_bins.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "common/error.hpp"

namespace xpusim {

namespace {

// BERT's pair rule (google-research/bert create_pretraining_data.py; LDDL's
// lddl/dask/bert/pretrain.py keeps it): [CLS] A [SEP] B [SEP], a target shorter than the
// maximum for 10 % of documents, a random second segment for half the pairs.
constexpr int64_t kSpecialTokens = 3;
constexpr double kShortTargetShare = 0.1;
constexpr double kRandomNextShare = 0.5;
// Documents simulated: the mean padded length moves by < 0.5 % between seeds at this size. The
// corpus stops earlier at kMaxSentences, and a document is cut at kDocumentChunks pairs' worth
// of tokens (past that it only adds full pairs), so a corpus of huge documents or one-token
// sentences stays a few tens of MB.
constexpr size_t kDocuments = 20000;
constexpr size_t kMaxSentences = 2000000;
constexpr int64_t kDocumentChunks = 64;
constexpr uint64_t kSeed = 20211101;  // fixed: the same inputs give the same bins

// mt19937_64's output sequence is fixed by the standard; the transforms below are written out
// (std:: distributions differ between standard libraries).
class Draw {
 public:
  explicit Draw(uint64_t seed) : gen_(seed) {}
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t integer(int64_t lo, int64_t hi) {                                   // [lo, hi]
    return std::min(hi, lo + static_cast<int64_t>(uniform() * static_cast<double>(hi - lo + 1)));
  }
  int64_t exponential(double mean, int64_t cap) {  // at least 1 token, at most cap
    const double x = -mean * std::log1p(-uniform());
    return x < static_cast<double>(cap) ? std::max<int64_t>(1, static_cast<int64_t>(x)) : cap;
  }

 private:
  std::mt19937_64 gen_;
};

using Document = std::vector<int64_t>;  // sentence lengths in tokens

std::vector<Document> make_corpus(double document_tokens_mean, double sentence_tokens_mean, int64_t max_text,
                                  Draw& draw) {
  std::vector<Document> docs;
  size_t sentences = 0;
  while (docs.size() < kDocuments && sentences < kMaxSentences) {
    Document& d = docs.emplace_back();
    const int64_t tokens = draw.exponential(document_tokens_mean, kDocumentChunks * max_text);
    for (int64_t left = tokens; left > 0;) {
      const int64_t s = draw.exponential(sentence_tokens_mean, left);
      d.push_back(s);
      left -= s;
    }
    sentences += d.size();
  }
  return docs;
}

// The lengths (specials included) of the pairs one document gives, by the rule above.
void pairs_of(const std::vector<Document>& docs, size_t index, int64_t max_text, Draw& draw,
              std::vector<int64_t>& lengths) {
  const Document& doc = docs[index];
  const int64_t target = draw.uniform() < kShortTargetShare ? draw.integer(2, max_text) : max_text;
  std::vector<int64_t> chunk;
  int64_t chunk_tokens = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(doc.size()); ++i) {
    chunk.push_back(doc[static_cast<size_t>(i)]);
    chunk_tokens += doc[static_cast<size_t>(i)];
    if (i + 1 < static_cast<int64_t>(doc.size()) && chunk_tokens < target) continue;
    const auto n = static_cast<int64_t>(chunk.size());
    const int64_t a_end = n < 2 ? 1 : draw.integer(1, n - 1);
    int64_t a = 0, b = 0;
    for (int64_t j = 0; j < a_end; ++j) a += chunk[static_cast<size_t>(j)];
    if (n == 1 || draw.uniform() < kRandomNextShare) {
      // The second segment runs from a random sentence of another document until it reaches
      // the rest of the target or that document ends; the chunk's unused sentences go back.
      const Document& other = docs[static_cast<size_t>(draw.integer(0, static_cast<int64_t>(docs.size()) - 1))];
      const int64_t need = target - a;
      for (size_t j = static_cast<size_t>(draw.integer(0, static_cast<int64_t>(other.size()) - 1));
           j < other.size() && b < need; ++j)
        b += other[j];
      i -= n - a_end;
    } else {
      for (int64_t j = a_end; j < n; ++j) b += chunk[static_cast<size_t>(j)];
    }
    lengths.push_back(std::min(a + b, max_text) + kSpecialTokens);
    chunk.clear();
    chunk_tokens = 0;
  }
}

// LDDL rounds each batch's longest sample up to a multiple of this (the tensor cores' width).
constexpr int64_t kAlignment = 8;

int64_t aligned(int64_t tokens) { return (tokens + kAlignment - 1) / kAlignment * kAlignment; }

// How many simulated pairs have each length (index 1..max_tokens), and their mean: what the
// corpus gives, whatever the bins and batch the loader then groups them into.
struct LengthCounts {
  std::vector<double> at;
  double pairs = 0, mean_tokens = 0;
};

LengthCounts count_lengths(int64_t max_tokens, double document_tokens_mean, double sentence_tokens_mean) {
  Draw draw(kSeed);
  const std::vector<Document> docs =
      make_corpus(document_tokens_mean, sentence_tokens_mean, max_tokens - kSpecialTokens, draw);
  std::vector<int64_t> lengths;
  for (size_t d = 0; d < docs.size(); ++d) pairs_of(docs, d, max_tokens - kSpecialTokens, draw, lengths);
  LengthCounts c;
  c.at.assign(static_cast<size_t>(max_tokens) + 1, 0.0);
  double tokens = 0;
  for (int64_t len : lengths) {
    c.at[static_cast<size_t>(len)] += 1.0;
    tokens += static_cast<double>(len);
  }
  c.pairs = static_cast<double>(lengths.size());
  c.mean_tokens = tokens / c.pairs;
  return c;
}

// The simulation is the costly part and depends on the corpus and the length only: a
// validation run asks for it on every row at several batches, so it runs once per process.
const LengthCounts& cached_lengths(int64_t max_tokens, double document_tokens_mean, double sentence_tokens_mean) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, double, double>, LengthCounts> memo;
  const auto key = std::make_tuple(max_tokens, document_tokens_mean, sentence_tokens_mean);
  std::lock_guard<std::mutex> lock(mu);
  auto it = memo.find(key);
  if (it == memo.end())
    it = memo.emplace(key, count_lengths(max_tokens, document_tokens_mean, sentence_tokens_mean)).first;
  return it->second;  // std::map nodes stay put: the reference outlives the lock
}

}  // namespace

SequenceBins bert_pair_bins(int64_t max_tokens, int64_t bin_tokens, double document_tokens_mean,
                            double sentence_tokens_mean, int64_t batch) {
  if (max_tokens <= kSpecialTokens + 1 || bin_tokens <= 0 || max_tokens % bin_tokens != 0 ||
      !(document_tokens_mean > 0) || !(sentence_tokens_mean > 0) || batch <= 0)
    throw InternalError("bert_pair_bins: needs max_tokens > 4 divisible by bin_tokens > 0, positive means and batch");
  const LengthCounts& c = cached_lengths(max_tokens, document_tokens_mean, sentence_tokens_mean);
  SequenceBins out;
  out.max_tokens = max_tokens;
  out.bin_tokens = bin_tokens;
  out.batch = batch;
  out.mean_sample_tokens = c.mean_tokens;
  const auto bins = static_cast<size_t>(max_tokens / bin_tokens);
  out.share.assign(bins, 0.0);
  const auto b = static_cast<double>(batch);
  for (size_t k = 0; k < bins; ++k) {
    const int64_t lo = static_cast<int64_t>(k) * bin_tokens + 1, hi = (static_cast<int64_t>(k) + 1) * bin_tokens;
    double in_bin = 0;
    for (int64_t x = lo; x <= hi; ++x) in_bin += c.at[static_cast<size_t>(x)];
    if (in_bin == 0) continue;
    out.share[k] = in_bin / c.pairs;
    // E[aligned(max of `batch` draws)] = sum over x of aligned(x) P(max = x), P(max <= x) = F(x)^batch.
    double below = 0, padded = 0;
    for (int64_t x = lo; x <= hi; ++x) {
      const double f0 = std::pow(below / in_bin, b);
      below += c.at[static_cast<size_t>(x)];
      padded += static_cast<double>(aligned(x)) * (std::pow(below / in_bin, b) - f0);
    }
    out.mean_padded_tokens += out.share[k] * std::min(padded, static_cast<double>(hi));
  }
  return out;
}

int64_t step_tokens(const SequenceBins& bins) {
  const auto up = static_cast<int64_t>(std::ceil(bins.mean_padded_tokens / static_cast<double>(kAlignment))) * kAlignment;
  return std::min(bins.max_tokens, std::max(kAlignment, up));
}

}  // namespace xpusim
