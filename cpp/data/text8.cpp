#include "data/text8.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "common/check.h"
#include "common/rng.h"

namespace slide {

namespace {
inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
}  // namespace

Corpus tokenize(const char* text, std::size_t size, std::int64_t min_count, std::int64_t max_vocab) {
  SLIDE_REQUIRE(min_count >= 1, "min_count must be >= 1, got " << min_count);
  SLIDE_REQUIRE(max_vocab >= 0, "max_vocab must be >= 0 (0 = no cap), got " << max_vocab);
  // Pass 1: count. Words are views into the text, which outlives this function's maps.
  std::unordered_map<std::string_view, std::int64_t> count;
  count.reserve(std::min<std::size_t>(1 << 20, size / 8 + 16));  // a vocabulary is far smaller than the text
  std::vector<std::string_view> tokens;
  tokens.reserve(size / 6);
  for (std::size_t i = 0; i < size;) {
    while (i < size && is_space(text[i])) ++i;
    std::size_t start = i;
    while (i < size && !is_space(text[i])) ++i;
    if (i > start) {
      std::string_view w(text + start, i - start);
      ++count[w];
      tokens.push_back(w);
    }
  }
  // Vocabulary: most frequent first, ties in alphabetical order (deterministic).
  std::vector<std::pair<std::string_view, std::int64_t>> vocab;
  for (const auto& kv : count)
    if (kv.second >= min_count) vocab.push_back(kv);
  std::sort(vocab.begin(), vocab.end(),
            [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  if (max_vocab > 0 && static_cast<std::int64_t>(vocab.size()) > max_vocab) vocab.resize(max_vocab);
  Corpus c;
  c.tokens_read = static_cast<std::int64_t>(tokens.size());
  std::unordered_map<std::string_view, std::int32_t> id;
  id.reserve(vocab.size() * 2);
  for (const auto& [w, n] : vocab) {
    id.emplace(w, static_cast<std::int32_t>(c.words.size()));
    c.words.emplace_back(w);
    c.counts.push_back(n);
  }
  // Pass 2: map the corpus, dropping out-of-vocabulary words as word2vec does.
  c.ids.reserve(tokens.size());
  for (std::string_view w : tokens) {
    auto it = id.find(w);
    if (it != id.end()) c.ids.push_back(it->second);
  }
  return c;
}

std::int64_t total_count(const std::int64_t* counts, std::int64_t n) {
  std::int64_t total = 0;
  for (std::int64_t w = 0; w < n; ++w) {
    SLIDE_REQUIRE(counts[w] >= 0, "word " << w << " has a negative count (" << counts[w] << ")");
    SLIDE_REQUIRE(!__builtin_add_overflow(total, counts[w], &total),
                  "the word counts overflow: their sum passes 2^63-1 at word " << w << " (count " << counts[w] << ")");
  }
  return total;
}

double keep_probability(std::int64_t count, std::int64_t total, double t) {
  if (t <= 0.0 || count <= 0) return 1.0;
  const double f = static_cast<double>(count) / static_cast<double>(total);
  return std::min(1.0, (std::sqrt(f / t) + 1.0) * t / f);
}

Samples make_samples(const std::int32_t* ids, std::int64_t n, std::int64_t begin, std::int64_t end,
                     const std::int64_t* counts, std::int64_t vocab_size, const SampleOptions& o) {
  SLIDE_REQUIRE(o.window >= 1, "window must be >= 1, got " << o.window);
  SLIDE_REQUIRE(o.subsample >= 0.0, "subsample must be >= 0, got " << o.subsample);
  SLIDE_REQUIRE(0 <= begin && begin <= end && end <= n, "sample range [" << begin << ", " << end << ") outside [0, " << n << "]");
  const std::int64_t total = total_count(counts, vocab_size);
  std::vector<std::uint32_t> keep_threshold(vocab_size);  // keep if hash < threshold
  for (std::int64_t w = 0; w < vocab_size; ++w)
    keep_threshold[w] = static_cast<std::uint32_t>(std::min(4294967295.0, keep_probability(counts[w], total, o.subsample) * 4294967296.0));
  // Whether position p survives subsampling, and its reduced window, depend on (seed, p) alone.
  auto kept = [&](std::int64_t p) {
    return static_cast<std::uint32_t>(mix64(o.seed ^ (static_cast<std::uint64_t>(p) * 0x9E3779B97F4A7C15ULL))) <
           keep_threshold[ids[p]] || keep_threshold[ids[p]] == 0xFFFFFFFFu;
  };
  Samples s;
  std::vector<std::int32_t> context;
  for (std::int64_t i = begin; i < end; ++i) {
    if (!kept(i)) continue;
    const int b = 1 + static_cast<int>(mix64(o.seed + 0x632BE59BD9B4E019ULL * (i + 1)) % o.window);
    // As word2vec: subsampled words are gone before windowing, so the window holds up to b kept
    // words on each side (the scan is bounded so a long run of dropped words cannot stall it).
    context.clear();
    for (int dir : {-1, 1}) {
      int found = 0;
      for (std::int64_t j = i + dir, scanned = 0; j >= 0 && j < n && found < b && scanned < 64 * b; j += dir, ++scanned)
        if (kept(j)) {
          context.push_back(ids[j]);
          ++found;
        }
    }
    if (context.empty()) continue;
    std::sort(context.begin(), context.end());
    context.erase(std::unique(context.begin(), context.end()), context.end());
    s.x_indices.push_back(ids[i]);
    s.x_indptr.push_back(static_cast<std::int64_t>(s.x_indices.size()));
    s.y_indices.insert(s.y_indices.end(), context.begin(), context.end());
    s.y_indptr.push_back(static_cast<std::int64_t>(s.y_indices.size()));
    s.positions.push_back(i);
  }
  return s;
}

}  // namespace slide
