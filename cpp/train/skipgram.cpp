#include "train/skipgram.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.h"
#include "common/parallel.h"
#include "common/rng.h"
#include "data/text8.h"
#include "simd/kernels.h"

namespace slide {

namespace {

constexpr int kSentence = 1000;  // kept words per stretch, as word2vec reads them
constexpr float kMaxLogit = 6.0f;  // beyond it the logistic step is (label - 0 or 1), as word2vec clamps

constexpr float kMinProbability = 1e-7f;  // keeps a pair's reported loss finite

}  // namespace

SkipGram::SkipGram(std::vector<std::int64_t> counts, int dim, std::uint64_t seed)
    : counts_(std::move(counts)), dim_(dim), seed_(seed) {
  const std::size_t v = counts_.size();
  SLIDE_REQUIRE(v >= 1, "a skip-gram model needs at least one word");
  SLIDE_REQUIRE(dim >= 1, "dimension must be >= 1, got " << dim);
  total_count(counts_.data(), static_cast<std::int64_t>(v));  // refuses negative counts and a sum past int64
  in_.resize(v * dim);
  out_.resize(v * dim);  // zero, as word2vec starts its output side
  Rng rng(seed);
  for (std::size_t i = 0; i < v * dim; ++i) in_[i] = (rng.uniform() - 0.5f) / static_cast<float>(dim);
  // Walker's alias table over count^0.75 (a word never seen still gets the smallest share).
  std::vector<double> p(v);
  for (std::size_t w = 0; w < v; ++w) p[w] = std::pow(static_cast<double>(std::max<std::int64_t>(counts_[w], 1)), 0.75);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  alias_prob_.assign(v, 1.0f);
  alias_.resize(v);
  std::iota(alias_.begin(), alias_.end(), 0);
  std::vector<double> scaled(v);
  std::vector<std::int32_t> small, large;
  for (std::size_t w = 0; w < v; ++w) {
    scaled[w] = p[w] * static_cast<double>(v) / total;
    (scaled[w] < 1.0 ? small : large).push_back(static_cast<std::int32_t>(w));
  }
  while (!small.empty() && !large.empty()) {
    const std::int32_t s = small.back(), l = large.back();
    small.pop_back();
    alias_prob_[s] = static_cast<float>(scaled[s]);
    alias_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
}

std::int32_t SkipGram::negative(std::uint64_t r) const {
  const std::uint32_t slot = static_cast<std::uint32_t>(((r >> 32) * static_cast<std::uint64_t>(alias_.size())) >> 32);
  const float u = static_cast<float>(r & 0xFFFFFF) * (1.0f / 16777216.0f);
  return u < alias_prob_[slot] ? static_cast<std::int32_t>(slot) : alias_[slot];
}

SkipGramStats SkipGram::train(const std::int32_t* ids, std::int64_t begin, std::int64_t end, float lr_begin,
                              float lr_end, const SkipGramOptions& o, std::uint64_t pass) {
  SLIDE_REQUIRE(0 <= begin && begin <= end, "word range [" << begin << ", " << end << ") is not a range");
  SLIDE_REQUIRE(o.window >= 1, "window must be >= 1, got " << o.window);
  SLIDE_REQUIRE(o.negatives >= 0, "negatives must be >= 0, got " << o.negatives);
  SLIDE_REQUIRE(o.subsample >= 0.0, "subsample must be >= 0, got " << o.subsample);
  SLIDE_REQUIRE(o.threads >= 1, "threads must be >= 1, got " << o.threads);
  const std::int64_t v = vocab_size();
  for (std::int64_t i = begin; i < end; ++i)
    SLIDE_REQUIRE(0 <= ids[i] && ids[i] < v, "word id " << ids[i] << " at position " << i << " outside [0, " << v << ")");
  const std::int64_t total = total_count(counts_.data(), v);
  std::vector<std::uint32_t> keep_threshold(v);  // keep a word when a draw's low 32 bits fall below
  for (std::int64_t w = 0; w < v; ++w) {
    const double keep = keep_probability(counts_[w], std::max<std::int64_t>(total, 1), o.subsample);
    keep_threshold[w] = keep >= 1.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(keep * 4294967296.0);
  }
  const Kernels& k = kernels();
  const std::size_t d = static_cast<std::size_t>(dim_);
  std::vector<SkipGramStats> per_thread(static_cast<std::size_t>(o.threads));
  parallel_team(o.threads, [&](int t, int team) {
    // HOGWILD: threads share both matrices without locks, as word2vec and SLIDE do.
    Rng rng(mix64(seed_ ^ mix64(pass * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(t) + 1)));
    const std::int64_t from = begin + (end - begin) * t / team, to = begin + (end - begin) * (t + 1) / team;
    SkipGramStats& stats = per_thread[t];
    std::vector<float> grad(d);
    std::vector<std::int32_t> sentence;
    sentence.reserve(kSentence);
    std::int64_t pos = from;
    const double span = static_cast<double>(std::max<std::int64_t>(to - from, 1));
    while (pos < to) {
      sentence.clear();
      const float lr = lr_begin + (lr_end - lr_begin) * static_cast<float>((pos - from) / span);
      while (pos < to && static_cast<int>(sentence.size()) < kSentence) {
        const std::int32_t w = ids[pos++];
        const std::uint32_t threshold = keep_threshold[w];
        if (threshold == 0xFFFFFFFFu || static_cast<std::uint32_t>(rng.next()) < threshold) sentence.push_back(w);
      }
      const int n = static_cast<int>(sentence.size());
      for (int i = 0; i < n; ++i) {
        const std::int32_t centre = sentence[i];
        const int reach = o.window - static_cast<int>(rng.below(static_cast<std::uint32_t>(o.window)));
        for (int j = std::max(0, i - reach); j <= std::min(n - 1, i + reach); ++j) {
          if (j == i) continue;
          float* in = in_.data() + static_cast<std::size_t>(sentence[j]) * d;
          std::fill(grad.begin(), grad.end(), 0.0f);
          for (int s = 0; s <= o.negatives; ++s) {
            const std::int32_t target = s == 0 ? centre : negative(rng.next());
            if (s > 0 && target == centre) continue;
            float* out = out_.data() + static_cast<std::size_t>(target) * d;
            const float logit = k.dot(in, out, d);
            const float label = s == 0 ? 1.0f : 0.0f;
            const float sigmoid = 1.0f / (1.0f + std::exp(-logit));
            const float p = logit > kMaxLogit ? 1.0f : logit < -kMaxLogit ? 0.0f : sigmoid;
            stats.loss -= std::log(std::max(s == 0 ? sigmoid : 1.0f - sigmoid, kMinProbability));
            const float g = (label - p) * lr;
            k.axpy(g, out, grad.data(), d);
            k.axpy(g, in, out, d);
          }
          k.axpy(1.0f, grad.data(), in, d);
          ++stats.pairs;
        }
      }
    }
    stats.words = to - from;  // subsampled words count as read, as word2vec's progress does
  });
  SkipGramStats sum;
  for (const auto& s : per_thread) {
    sum.words += s.words;
    sum.pairs += s.pairs;
    sum.loss += s.loss;
  }
  return sum;
}

}  // namespace slide
