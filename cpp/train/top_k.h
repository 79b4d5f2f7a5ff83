// The k best (score, id) pairs seen so far; k is small, so a linear scan beats a heap.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace slide {

class TopK {
 public:
  explicit TopK(int k) : k_(k) { reset(); }
  int capacity() const { return k_; }
  void reset() {
    ids_.clear();
    scores_.clear();
    min_pos_ = 0;
    min_ = -std::numeric_limits<float>::infinity();
  }
  void push(std::int32_t id, float score) {
    if (static_cast<int>(ids_.size()) < k_) {
      ids_.push_back(id);
      scores_.push_back(score);
      if (static_cast<int>(ids_.size()) == k_) find_min();
      return;
    }
    if (!beats_min(id, score)) return;
    ids_[min_pos_] = id;
    scores_[min_pos_] = score;
    find_min();
  }
  // The score a new entry must reach to be pushed (the k-th best so far; -inf until k are held).
  // A score equal to it may still lose on id, so callers skip only scores below it.
  float threshold() const { return static_cast<int>(ids_.size()) < k_ ? -std::numeric_limits<float>::infinity() : min_; }
  // Writes k entries, best first (ties by smaller id); missing entries get id -1 and -inf.
  void write(std::int32_t* ids, float* scores) {
    std::vector<int> order(ids_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [this](int a, int b) {
      return scores_[a] > scores_[b] || (scores_[a] == scores_[b] && ids_[a] < ids_[b]);
    });
    for (int i = 0; i < k_; ++i) {
      const bool have = i < static_cast<int>(order.size());
      ids[i] = have ? ids_[order[i]] : -1;
      scores[i] = have ? scores_[order[i]] : -std::numeric_limits<float>::infinity();
    }
  }

 private:
  // Ties go to the smaller id, whatever order ids arrive in: the entry to evict is the lowest
  // score, and among equal scores the largest id.
  bool beats_min(std::int32_t id, float score) const {
    return score > min_ || (score == min_ && id < ids_[min_pos_]);
  }
  void find_min() {
    min_pos_ = 0;
    for (std::size_t i = 1; i < scores_.size(); ++i)
      if (scores_[i] < scores_[min_pos_] || (scores_[i] == scores_[min_pos_] && ids_[i] > ids_[min_pos_])) min_pos_ = i;
    min_ = scores_[min_pos_];
  }
  int k_;
  std::vector<std::int32_t> ids_;
  std::vector<float> scores_;
  std::size_t min_pos_;
  float min_;
};

}  // namespace slide
