#include "train/shared_batch.h"

#include <algorithm>

#include "common/aligned_array.h"
#include "train/output_batch.h"
#include "train/parallel_rows.h"

namespace slide {

namespace {

class SharedBatch {
 public:
  SharedBatch(Network& net, const CsrFloat& x, const CsrIds& y)
      : net_(net),
        w_(net.batch_workspace()),
        x_(x),
        y_(y),
        K_(net.layers.back().params.cols),
        ldh_(padded_stride(net.layers.back().params.cols)),
        comm_(net.collective()) {}

  BatchStats run(const std::int64_t* rows, std::int64_t count, const OptimizerStep* output_step) {
    w_.rows.clear();
    for (std::int64_t i = 0; i < count; ++i)  // a sample without labels has nothing to learn
      if (y_.indptr[rows[i] + 1] > y_.indptr[rows[i]]) w_.rows.push_back(rows[i]);
    hidden_forward();
    const BatchStats stats = output_batch_gradients(net_, w_.rows.size(), output_step);
    if (stats.samples) hidden_backward();
    return stats;
  }

 private:
  // The key of input dropout's mask for this rank's b-th sample: ranks get disjoint keys, so their
  // samples at one position of a batch do not drop the same features.
  std::int64_t key(std::int64_t b) const { return comm_ ? (std::int64_t{comm_->rank()} << 40) + b : b; }

  // Per sample: the layers below the output.
  void hidden_forward() {
    const std::size_t B = w_.rows.size();
    w_.hidden.assign(B * ldh_, 0.0f);
    w_.label_ptr.assign(1, 0);
    w_.labels.clear();
    for (std::int64_t r : w_.rows) {
      for (std::int64_t q = y_.indptr[r]; q < y_.indptr[r + 1]; ++q)
        w_.labels.push_back(static_cast<std::uint32_t>(y_.indices[q]));
      w_.label_ptr.push_back(static_cast<std::int64_t>(w_.labels.size()));
    }
    parallel_rows(net_, static_cast<std::int64_t>(B), 4, [&](ThreadState& ts, std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) {
        const Activations& h = net_.forward_hidden(ts, sample_at(x_, &y_, w_.rows[b], key(b)), Mode::kTrain, ts.rng);
        std::copy(h.values.begin(), h.values.begin() + K_, &w_.hidden[b * ldh_]);
      }
    });
  }

  // Per sample, from dL/dhidden down through the hidden layers and the embedding.
  void hidden_backward() {
    const bool recompute = net_.layers.size() > 1;  // a thread state holds one sample's activations
    const float* delta = comm_ ? w_.held_delta.data() : w_.hidden_delta.data();
    parallel_rows(net_, static_cast<std::int64_t>(w_.held), 4, [&](ThreadState& ts, std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) {
        const SampleView s = sample_at(x_, &y_, w_.rows[b], key(b));
        if (recompute) net_.forward_hidden(ts, s, Mode::kTrain, ts.rng);
        Activations& top = net_.top_hidden(ts);
        const float* hidden = &w_.hidden[(w_.first + b) * ldh_];
        if (!recompute) {
          top.set_dense(static_cast<std::uint32_t>(K_));
          std::copy(hidden, hidden + K_, top.values.begin());
        }
        std::copy(&delta[b * ldh_], &delta[b * ldh_] + K_, top.delta.begin());
        net_.backward_hidden(ts, s);
      }
    });
  }

  Network& net_;
  BatchWorkspace& w_;
  const CsrFloat& x_;
  const CsrIds& y_;
  const std::size_t K_, ldh_;
  Collective* const comm_;
};

}  // namespace

BatchStats shared_batch_gradients(Network& net, const CsrFloat& x, const CsrIds& y, const std::int64_t* rows,
                                  std::int64_t count, const OptimizerStep* output_step) {
  return SharedBatch(net, x, y).run(rows, count, output_step);
}

}  // namespace slide
