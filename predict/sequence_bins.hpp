// Sequence-length binning: a loader that groups samples into bins of similar length and pads
// each batch only to its longest sample (NVIDIA's LDDL, the loader of DeepLearningExamples'
// PyTorch BERT pre-training from NGC 21.11: phase 2 at 512 tokens in bins of 64). The device
// then runs shorter sequences than the model's length on most steps.
//
// How long the samples are follows from how they are made: BERT's sentence-pair rule
// (create_pretraining_data, LDDL's preprocessor does the same) cuts each document into chunks
// of the target length; half the pairs (and every one-sentence chunk) take their second
// segment from a random point of another document, which often ends first; 10 % of the
// targets are drawn uniformly shorter. Over a corpus whose documents and sentences have the
// stated mean lengths (exponentially distributed, an assumption), the pairs' lengths are
// counted here by simulating that rule with a fixed seed: deterministic, no constant fitted.
#pragma once
#include <cstdint>
#include <vector>

namespace xpusim {

struct SequenceBins {
  int64_t max_tokens = 0;         // the model's sequence length: the longest bin (the memory peak)
  int64_t bin_tokens = 0;         // width of a bin
  std::vector<double> share;      // share of samples, so of batches, per bin (shortest first)
  double mean_sample_tokens = 0;  // tokens a sample holds (specials included, padding not)
  int64_t batch = 0;              // samples per batch (on one device), all from one bin
  double mean_padded_tokens = 0;  // tokens a batch is padded to (its longest sample, aligned to 8), averaged
};

// The bins of BERT sentence pairs of at most `max_tokens` tokens (3 of them [CLS] and [SEP]),
// made from documents of `document_tokens_mean` tokens in sentences of
// `sentence_tokens_mean` (both means of exponential distributions), in bins of `bin_tokens`,
// for batches of `batch` samples drawn from one bin: each is padded to its longest sample,
// rounded up to a multiple of 8 (LDDL's sequence_length_alignment), the expectation taken over
// the simulated lengths of the bin. InternalError on a non-positive argument or a bin width
// that does not divide max_tokens.
SequenceBins bert_pair_bins(int64_t max_tokens, int64_t bin_tokens, double document_tokens_mean,
                            double sentence_tokens_mean, int64_t batch);

// The length a step runs at: the mean padded length rounded up to a multiple of 8. Time is
// close to linear in the length for a BERT-sized model (attention scores are ~8 % of
// BERT-large's FLOPs at 512), so one graph at the mean stands for the mix of bins.
int64_t step_tokens(const SequenceBins& bins);

}  // namespace xpusim
