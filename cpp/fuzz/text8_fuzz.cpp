// libFuzzer target for the Text8 tokenizer and sample generator: any bytes give a vocabulary
// whose counts add up, ids inside it, and word2vec samples whose inputs and context labels are
// valid word ids. The first input byte picks min_count, max_vocab, window and subsampling.
// Built and run by benches/fuzz_parsers.py.
#include <cstdint>
#include <cstdlib>
#include <numeric>

#include "data/text8.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t knobs = data[0];
  const std::int64_t min_count = 1 + (knobs & 3);
  const std::int64_t max_vocab = (knobs >> 2) & 7;
  slide::Corpus c = slide::tokenize(reinterpret_cast<const char*>(data + 1), size - 1, min_count, max_vocab);
  const std::int64_t vocab = static_cast<std::int64_t>(c.words.size());
  require(static_cast<std::int64_t>(c.counts.size()) == vocab);
  require(max_vocab == 0 || vocab <= max_vocab);
  std::int64_t kept = 0;
  for (std::int64_t w = 0; w < vocab; ++w) {
    require(c.counts[w] >= min_count && !c.words[w].empty());
    require(w == 0 || c.counts[w - 1] >= c.counts[w]);
    kept += c.counts[w];
  }
  require(kept == static_cast<std::int64_t>(c.ids.size()) && kept <= c.tokens_read);
  for (std::int32_t id : c.ids) require(id >= 0 && id < vocab);
  if (vocab == 0) return 0;
  slide::SampleOptions o;
  o.window = 1 + ((knobs >> 5) & 3);
  o.subsample = (knobs & 0x80) ? 1e-3 : 0.0;
  const std::int64_t n = static_cast<std::int64_t>(c.ids.size());
  slide::Samples s = slide::make_samples(c.ids.data(), n, 0, n, c.counts.data(), vocab, o);
  require(s.x_indptr.size() == s.positions.size() + 1 && s.y_indptr.size() == s.positions.size() + 1);
  for (std::int32_t x : s.x_indices) require(x >= 0 && x < vocab);
  for (std::int32_t y : s.y_indices) require(y >= 0 && y < vocab);
  for (std::int64_t p : s.positions) require(p >= 0 && p < n);
  return 0;
}
