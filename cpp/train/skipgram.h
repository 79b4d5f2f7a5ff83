// Word vectors by skip-gram with negative sampling (word2vec's SGNS, Mikolov et al. 2013), trained
// straight from a corpus of word ids: per (context word, centre word) pair, one logistic step on
// the pair and on `negatives` words drawn from the unigram distribution raised to 3/4, plain SGD
// with a linearly falling rate, HOGWILD over threads. For text8-style data this is what the
// softmax output layer (sampled or not) costs too much to compete with: a pair touches 1 + 5 rows
// instead of an active set of hundreds (README, Text8).
#pragma once
#include <cstdint>
#include <vector>

#include "common/aligned_array.h"

namespace slide {

struct SkipGramOptions {
  int window = 5;           // context: up to this many kept words on each side (reduced at random)
  int negatives = 5;        // words drawn per pair from unigram^0.75
  double subsample = 1e-3;  // word2vec's t; 0 keeps every word
  int threads = 1;
};

struct SkipGramStats {
  std::int64_t words = 0;  // corpus positions read
  std::int64_t pairs = 0;  // (context, centre) pairs trained
  double loss = 0.0;       // sum over pairs of the pair's and its negatives' logistic losses
};

class SkipGram {
 public:
  // `counts` (one per word id) give the subsampling and negative-sampling distributions.
  SkipGram(std::vector<std::int64_t> counts, int dim, std::uint64_t seed);

  // Train on ids[begin, end) (a thread's context never crosses the range it reads), the rate
  // falling linearly from lr_begin at `begin` to lr_end at `end`. `pass` varies the random draws
  // between passes over the same range; with threads = 1 the result depends only on the inputs.
  SkipGramStats train(const std::int32_t* ids, std::int64_t begin, std::int64_t end, float lr_begin, float lr_end,
                      const SkipGramOptions& o, std::uint64_t pass);

  std::int64_t vocab_size() const { return static_cast<std::int64_t>(counts_.size()); }
  int dim() const { return dim_; }
  float* word_vectors() { return in_.data(); }      // vocab x dim: the vectors users get
  float* context_vectors() { return out_.data(); }  // vocab x dim: the output side

  // One draw from unigram^0.75 (Walker's alias method) for 64 random bits.
  std::int32_t negative(std::uint64_t r) const;

 private:
  std::vector<std::int64_t> counts_;
  int dim_;
  std::uint64_t seed_;
  AlignedArray<float> in_, out_;
  std::vector<float> alias_prob_;
  std::vector<std::int32_t> alias_;
};

}  // namespace slide
