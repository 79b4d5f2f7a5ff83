// The k best (score, id) pairs seen so far, best first, ties to the smaller id.
//
// Entries above the bar are appended to a buffer of up to 2k; when it fills, the k best are kept
// (nth_element) and the bar becomes the k-th best. Each push costs O(1) amortised, where keeping
// exactly k and finding the new minimum on every accepted push cost O(k): the re-ranker's
// training shortlists (k = 100 over 40,415 outputs on debian-deps) spent more time there than in
// the int8 scan itself. The bar only ever trails the k-th best so far, so no entry that could end
// in the top k is refused.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace slide {

class TopK {
 public:
  explicit TopK(int k) : k_(k) {
    entries_.reserve(2 * static_cast<std::size_t>(k));
    reset();
  }
  int capacity() const { return k_; }
  void reset() {
    entries_.clear();
    held_k_ = false;
    bar_ = -std::numeric_limits<float>::infinity();
  }
  void push(std::int32_t id, float score) {
    if (held_k_ && rank(score) < bar_) return;
    entries_.push_back({score, id});
    if (!held_k_ && entries_.size() == static_cast<std::size_t>(k_)) {
      held_k_ = true;
      bar_ = rank(std::max_element(entries_.begin(), entries_.end(), Better{})->score);  // the worst held
    } else if (entries_.size() == 2 * static_cast<std::size_t>(k_)) {
      keep_best_k();
    }
  }
  // A score below this cannot enter the top k (-inf until k are held). A score equal to it may
  // still win on id, so callers skip only scores below it.
  float threshold() const { return bar_; }
  // Writes k entries, best first (ties by smaller id); missing entries get id -1 and -inf.
  void write(std::int32_t* ids, float* scores) {
    std::sort(entries_.begin(), entries_.end(), Better{});
    for (int i = 0; i < k_; ++i) {
      const bool have = i < static_cast<int>(entries_.size());
      ids[i] = have ? entries_[i].id : -1;
      scores[i] = have ? entries_[i].score : -std::numeric_limits<float>::infinity();
    }
  }

 private:
  struct Entry {
    float score;
    std::int32_t id;
  };
  // NaN ranks below every number, so the order stays a strict weak order (sort and nth_element
  // need one) and a NaN never displaces a number.
  static float rank(float score) { return std::isnan(score) ? -std::numeric_limits<float>::infinity() : score; }
  // A type, not a function pointer, so that sort and nth_element inline the comparison (through a
  // pointer it cost a quarter of a k = 100 scan's selection).
  struct Better {
    bool operator()(const Entry& a, const Entry& b) const {
      const float ra = rank(a.score), rb = rank(b.score);
      return ra > rb || (ra == rb && a.id < b.id);
    }
  };
  void keep_best_k() {
    std::nth_element(entries_.begin(), entries_.begin() + (k_ - 1), entries_.end(), Better{});
    entries_.resize(static_cast<std::size_t>(k_));
    bar_ = rank(entries_.back().score);  // the k-th best: nth_element put it at position k - 1
  }
  int k_;
  std::vector<Entry> entries_;
  bool held_k_;
  float bar_;
};

}  // namespace slide
