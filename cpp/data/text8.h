// Text8-style corpora for word2vec-style training (as SLIDE trained it): the input is the one-hot
// centre word, the labels are the distinct context words in a window. Tokenising builds the
// vocabulary (min count, optional cap, most frequent first); samples are generated for any range
// of positions on demand, deterministically from a seed, so a 17M-word corpus is streamed in chunks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slide {

struct Corpus {
  std::vector<std::string> words;    // id -> word, most frequent first
  std::vector<std::int64_t> counts;  // id -> occurrences
  std::vector<std::int32_t> ids;     // the corpus as word ids (out-of-vocabulary words dropped)
  std::int64_t tokens_read = 0;      // before dropping
};

Corpus tokenize(const char* text, std::size_t size, std::int64_t min_count, std::int64_t max_vocab);

struct SampleOptions {
  int window = 2;             // context: up to this many kept words on each side (reduced at random)
  double subsample = 1e-4;    // word2vec's t; 0 keeps every word
  std::uint64_t seed = 0;
};

struct Samples {
  std::vector<std::int64_t> x_indptr{0};
  std::vector<std::int32_t> x_indices;
  std::vector<std::int64_t> y_indptr{0};
  std::vector<std::int32_t> y_indices;
  std::vector<std::int64_t> positions;  // corpus position of each sample's centre word
};

// Samples for centre positions [begin, end) of `ids` (context may reach outside the range).
Samples make_samples(const std::int32_t* ids, std::int64_t n, std::int64_t begin, std::int64_t end,
                     const std::int64_t* counts, std::int64_t vocab_size, const SampleOptions& o);

// The sum of `n` word counts; std::invalid_argument when one is negative or the sum passes 2^63-1
// (counts from a model file are untrusted, and a wrapped total silently drops every word).
std::int64_t total_count(const std::int64_t* counts, std::int64_t n);

// Probability that word2vec's subsampling keeps a word with this count out of `total`.
double keep_probability(std::int64_t count, std::int64_t total, double t);

}  // namespace slide
