// One layer's output for one sample: every neuron (dense) or an active subset (ids), with the
// values and the back-propagated deltas. Owned by a thread, reused across samples.
#pragma once
#include <cstdint>
#include <vector>

namespace slide {

struct Activations {
  bool dense = true;
  std::vector<std::uint32_t> ids;  // active neuron ids when !dense
  std::vector<float> values;       // one per active neuron (dense: indexed by neuron id)
  std::vector<float> delta;
  std::uint32_t count = 0;

  std::uint32_t id(std::uint32_t p) const { return dense ? p : ids[p]; }
  void set_dense(std::uint32_t n) {
    dense = true;
    count = n;
    values.resize(n);
    delta.resize(n);
  }
  void set_sparse_from_ids() {
    dense = false;
    count = static_cast<std::uint32_t>(ids.size());
    if (values.size() < count) values.resize(count);
    if (delta.size() < count) delta.resize(count);
  }
};

}  // namespace slide
