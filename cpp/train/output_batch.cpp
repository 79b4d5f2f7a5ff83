#include "train/output_batch.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/aligned_array.h"
#include "common/parallel.h"
#include "simd/kernels.h"
#include "train/bf16_operands.h"
#include "train/parallel_rows.h"

namespace slide {

namespace {

// Output neurons per pass: B x kChunk logits (8 MB at B = 256) stay in the last-level cache.
constexpr std::size_t kChunk = 8192;

struct Range {
  std::size_t begin, end;
};

// Part `t` of `parts` of [0, n), boundaries on multiples of `align` so GEMM tiles stay whole.
Range share(std::size_t n, int parts, int t, std::size_t align) {
  const std::size_t blocks = (n + align - 1) / align;
  const std::size_t b0 = blocks * t / parts, b1 = blocks * (t + 1) / parts;
  return {std::min(n, b0 * align), std::min(n, b1 * align)};
}

class OutputBatch {
 public:
  OutputBatch(Network& net, const OptimizerStep* step, bool keep_compact)
      : net_(net),
        step_(step),
        keep_compact_(keep_compact),
        w_(net.batch_workspace()),
        out_(net.layers.back()),
        p_(out_.params),
        k_(kernels()),
        T_(net.step_threads()),
        K_(p_.cols),
        ldh_(padded_stride(p_.cols)),
        comm_(net.collective()),
        shard_(net.config().output_shard),
        bf16_(net.config().bf16_matmul && bf16_matmul_native(k_)),
        decoupled_(net.config().output_loss == OutputLoss::kDecoupled),
        K2_(K_ + (K_ & 1)) {}

  BatchStats run(std::size_t samples) {
    BatchStats stats;
    B_ = samples;
    w_.first = 0;
    w_.held = B_;
    w_.compact_rows = 0;
    hash_samples();
    if (comm_) share_samples();  // B_ becomes every rank's samples
    if (B_ == 0) return stats;
    if (bf16_) hidden_operands();
    stats.retrieved = static_cast<std::int64_t>(choose_outputs()) * static_cast<std::int64_t>(B_);
    output_gradients();
    stats.samples = static_cast<std::int64_t>(B_);
    stats.active = static_cast<std::int64_t>(N_ * B_);
    for (std::size_t b = 0; b < B_; ++b) stats.loss += w_.loss[b];
    stats.nonfinite_rows = nonfinite_.load();
    return stats;
  }

 private:
  std::uint32_t neuron(std::size_t position) const {
    return ids_ ? ids_[position] : static_cast<std::uint32_t>(position);
  }

  // A sampled output layer: each sample's bucket in every table, from its hidden activations.
  void hash_samples() {
    L_ = out_.sampled() ? out_.index()->config().l : 0;
    const std::size_t L = static_cast<std::size_t>(L_);
    w_.buckets.resize(B_ * L);
    if (!L) return;
    parallel_rows(net_, static_cast<std::int64_t>(B_), 16, [&](ThreadState& ts, std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b)
        out_.index()->family().buckets(&w_.hidden[b * ldh_], &w_.buckets[b * L], ts.layers.back().hash);
    });
  }

  // The shared output neurons; returns how many candidates the tables retrieved.
  std::uint32_t choose_outputs() {
    if (!out_.sampled()) {
      ids_ = nullptr;
      N_ = p_.rows;
      return 0;
    }
    if (!w_.active) w_.active = std::make_unique<SharedActiveSet>(net_.config().outputs(), shard_, p_.rows, T_);
    const LshConfig& c = out_.index()->config();
    const std::uint32_t retrieved =
        w_.active->build(out_.index()->tables(), w_.buckets.data(), B_, w_.labels,
                         static_cast<std::size_t>(c.batch_active),
                         static_cast<std::size_t>(training_min_active(c, net_.samples_seen)),
                         net_.state(0).rng, comm_);
    ids_ = w_.active->ids().data();
    N_ = w_.active->ids().size();
    return retrieved;
  }

  // bf16_matmul: the batch's hidden activations as the logits product's A (row-major) and the
  // weight gradient's B (samples in pairs). Padding stays zero: hidden's columns past K are.
  void hidden_operands() {
    w_.hidden_bf16.resize(B_ * ldh_);
    k_.to_bf16(w_.hidden.data(), w_.hidden_bf16.data(), B_ * ldh_);
    const std::size_t pairs = (B_ + 1) / 2;
    w_.hidden_pairs.resize(pairs * 2 * ldh_);
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(pairs, team, t, 1);
      interleave_row_pairs(w_.hidden_bf16.data(), B_, ldh_, ldh_, r.begin, r.end, w_.hidden_pairs.data(), 2 * ldh_);
    });
  }

  // Logits of output positions [c0, c0 + nc) for every sample, bias included, into w_.logits.
  void chunk_logits(std::size_t c0, std::size_t nc) {
    const bool gather = ids_ != nullptr;
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(nc, team, t, 16);
      for (std::size_t n = r.begin; n < r.end; ++n) {
        const std::uint32_t j = neuron(c0 + n);
        w_.bias[n] = p_.bias[j];
        if (bf16_) {  // the row rounded once; both products read it, transposed and in pairs
          bf16* row = &w_.weights_bf16[n * ldh_];
          if (p_.has_bf16()) std::copy(p_.row_bf16(j), p_.row_bf16(j) + K_, row);
          else k_.to_bf16(p_.row(j), row, K_);
          if (K2_ != K_) row[K_] = 0;
          scatter_row_words(row, K2_ / 2, n, w_.weight_words_t.data(), ldc_);
          continue;
        }
        const float* row = p_.row(j);
        if (p_.has_bf16()) {  // precision="bf16": the passes read the rounded copy, as per sample
          k_.from_bf16(p_.row_bf16(j), &w_.weights[n * ldh_], K_);
          row = &w_.weights[n * ldh_];
        } else if (gather) {
          std::copy(row, row + K_, &w_.weights[n * ldh_]);
        }
        for (std::size_t q = 0; q < K_; ++q) w_.weights_t[q * ldc_ + n] = row[q];
      }
    });
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(nc, team, t, 32);
      if (r.end == r.begin) return;
      if (bf16_)
        k_.gemm_bf16(B_, r.end - r.begin, K2_, w_.hidden_bf16.data(), ldh_,
                     reinterpret_cast<const bf16*>(w_.weight_words_t.data()) + 2 * r.begin, 2 * ldc_,
                     &w_.logits[r.begin], ldc_, false);
      else
        k_.gemm(B_, r.end - r.begin, K_, w_.hidden.data(), ldh_, &w_.weights_t[r.begin], ldc_, &w_.logits[r.begin],
                ldc_, false);
    });
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(B_, team, t, 1);
      for (std::size_t b = r.begin; b < r.end; ++b) k_.axpy(1.0f, w_.bias.data(), &w_.logits[b * ldc_], nc);
    });
  }

  // Folds a chunk into each sample's running max and sum of exp (online softmax). With one chunk
  // (`keep_exp`) the exponentials stay in the logits buffer for the gradient. The decoupled loss
  // also keeps each label's logit: a label's gradient needs its own, whichever chunk or shard it is in.
  void accumulate_normalisers(std::size_t c0, std::size_t nc, bool keep_exp) {
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(B_, team, t, 1);
      for (std::size_t b = r.begin; b < r.end; ++b) {
        float* z = &w_.logits[b * ldc_];
        if (decoupled_)
          for (std::int64_t q = w_.label_ptr[b]; q < w_.label_ptr[b + 1]; ++q) {
            const std::uint32_t pos = position_of(w_.labels[static_cast<std::size_t>(q)]);
            if (pos >= c0 && pos < c0 + nc) w_.label_logit[static_cast<std::size_t>(q)] = z[pos - c0];
          }
        const float m = std::max(w_.row_max[b], k_.max_value(z, nc));
        const float sum = k_.exp_sum(z, keep_exp ? z : w_.scratch.data() + t * ldc_, nc, m);
        w_.row_sum[b] = w_.row_sum[b] * std::exp(w_.row_max[b] - m) + sum;
        w_.row_max[b] = m;
      }
    });
  }

  // Where label `label` sits among the shared outputs (kAbsent: not in this shard's set).
  std::uint32_t position_of(std::uint32_t label) const {
    return ids_ ? w_.active->position(label) : held_row(label);
  }

  // One chunk's logits (or, with `have_exp`, their exp(z - this shard's max)) -> dL/dlogits in
  // place (nn/output_loss.h): a non-label's exp(z - log_denominator), and each label's own term.
  // Adds the labels' share of the loss.
  void chunk_loss_gradient(std::size_t c0, std::size_t nc, bool have_exp) {
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(B_, team, t, 1);
      for (std::size_t b = r.begin; b < r.end; ++b) {
        float* z = &w_.logits[b * ldc_];
        if (have_exp) {
          const float inv = w_.row_scale[b];
          for (std::size_t n = 0; n < nc; ++n) z[n] *= inv;
        } else {
          k_.exp_sum(z, z, nc, w_.log_denominator[b]);
        }
        const std::int64_t r0 = w_.label_ptr[b], r1 = w_.label_ptr[b + 1];
        const float target = 1.0f / static_cast<float>(r1 - r0);
        for (std::int64_t q = r0; q < r1; ++q) {
          const std::uint32_t pos = position_of(w_.labels[static_cast<std::size_t>(q)]);
          if (pos < c0 || pos >= c0 + nc) continue;
          if (decoupled_) {
            const double own = w_.decoupled[b].probability(w_.label_exp[static_cast<std::size_t>(q)]);
            w_.loss[b] -= target * static_cast<float>(std::log(std::max(own, 1e-300)));
            z[pos - c0] = target * static_cast<float>(own - 1.0);
          } else {
            w_.loss[b] -= target * std::log(std::max(z[pos - c0], 1e-30f));
            z[pos - c0] -= target;
          }
        }
      }
    });
  }

  // dL/dhidden += G W, and the chunk's weight and bias gradients G^T H.
  void chunk_backward(std::size_t c0, std::size_t nc) {
    if (bf16_) return chunk_backward_bf16(c0, nc);
    const bool gathered = ids_ != nullptr;
    const bool copied = gathered || p_.has_bf16();  // the chunk's rows sit in w_.weights
    const float* wa = copied ? w_.weights.data() : p_.row(static_cast<std::uint32_t>(c0));
    const std::size_t ldw = copied ? ldh_ : p_.stride;
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(B_, team, t, 1);
      if (r.end > r.begin)
        k_.gemm(r.end - r.begin, K_, nc, &w_.logits[r.begin * ldc_], ldc_, wa, ldw, &w_.hidden_delta[r.begin * ldh_],
                ldh_, c0 > 0);
    });
    parallel_team(T_, [&](int t, int team) {  // G^T, so the weight gradient is a plain product too
      const Range r = share(nc, team, t, 16);
      for (std::size_t n = r.begin; n < r.end; ++n)
        for (std::size_t b = 0; b < B_; ++b) w_.logits_t[n * B_ + b] = w_.logits[b * ldc_ + n];
    });
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(nc, team, t, 6);
      if (r.end == r.begin) return;
      const float* gt = &w_.logits_t[r.begin * B_];
      if (!gathered) {  // rows of a dense layer are contiguous: accumulate in place
        k_.gemm(r.end - r.begin, K_, B_, gt, B_, w_.hidden.data(), ldh_, p_.grad_row(static_cast<std::uint32_t>(c0 + r.begin)),
                p_.stride, true);
      } else {
        k_.gemm(r.end - r.begin, K_, B_, gt, B_, w_.hidden.data(), ldh_, &w_.weight_grad[r.begin * ldh_], ldh_, false);
      }
      for (std::size_t n = r.begin; n < r.end; ++n) {
        const float* g = &w_.logits_t[n * B_];
        float db = 0.0f;
        for (std::size_t b = 0; b < B_; ++b) db += g[b];
        w_.bias_grad[n] = db;
      }
      add_chunk_gradients(t, c0, r);
    });
  }

  // Outputs [r.begin, r.end) of the chunk at c0: their bias gradients (bias_grad) into the layer's,
  // and for a sampled layer their weight gradients (weight_grad) into the gathered rows, claimed
  // for this step's update; with step_, a sampled layer's rows take that step here instead, from
  // the chunk's gradients. A dense layer's weight gradient went into its rows directly.
  void add_chunk_gradients(int t, std::size_t c0, Range r) {
    if (compact_) return;  // the gradients stay where they are, for the step
    std::vector<std::uint32_t>& touched = net_.state(t).layers.back().touched;
    for (std::size_t n = r.begin; n < r.end; ++n) {
      const std::uint32_t j = neuron(c0 + n);
      if (!ids_) {
        p_.bias_grad[j] += w_.bias_grad[n];
      } else if (step_) {  // each active row once per batch: its step from the gathered gradient
        if (out_.step_gathered_row(*step_, k_, j, &w_.weight_grad[n * ldh_], &w_.bias_grad[n]))
          nonfinite_.fetch_add(1, std::memory_order_relaxed);
      } else {
        out_.accumulate_gathered_row(k_, j, &w_.weight_grad[n * ldh_], w_.bias_grad[n], touched);
      }
    }
  }

  // chunk_backward from BF16 operands: G rounded once, row-major for dL/dhidden and transposed for
  // the weight gradient; the bias gradient sums the fp32 G.
  void chunk_backward_bf16(std::size_t c0, std::size_t nc) {
    const bool gathered = ids_ != nullptr;
    const std::size_t nc2 = nc + (nc & 1), B2 = B_ + (B_ & 1);
    parallel_team(T_, [&](int t, int team) {
      const Range rows = share(B_, team, t, 1);
      for (std::size_t b = rows.begin; b < rows.end; ++b) {
        k_.to_bf16(&w_.logits[b * ldc_], &w_.logits_bf16[b * ldc_], nc);
        if (nc2 != nc) w_.logits_bf16[b * ldc_ + nc] = 0;
      }
      const Range pairs = share(nc2 / 2, team, t, 1);
      interleave_row_pairs(w_.weights_bf16.data(), nc, K2_, ldh_, pairs.begin, pairs.end, w_.weight_pairs.data(),
                           2 * ldh_);
    });
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(B_, team, t, 1);
      if (r.end > r.begin)
        k_.gemm_bf16(r.end - r.begin, K_, nc2, &w_.logits_bf16[r.begin * ldc_], ldc_, w_.weight_pairs.data(), 2 * ldh_,
                     &w_.hidden_delta[r.begin * ldh_], ldh_, c0 > 0);
    });
    parallel_team(T_, [&](int t, int team) {
      const Range r = share(nc, team, t, 6);
      if (r.end == r.begin) return;
      const std::size_t len = r.end - r.begin;
      std::fill(&w_.bias_grad[r.begin], &w_.bias_grad[r.begin] + len, 0.0f);
      for (std::size_t b = 0; b < B_; ++b) k_.axpy(1.0f, &w_.logits[b * ldc_ + r.begin], &w_.bias_grad[r.begin], len);
      for (std::size_t n = r.begin; n < r.end; ++n) {
        bf16* gt = &w_.logits_t_bf16[n * B2];
        for (std::size_t b = 0; b < B_; ++b) gt[b] = w_.logits_bf16[b * ldc_ + n];
        if (B2 != B_) gt[B_] = 0;
      }
      const bf16* gt = &w_.logits_t_bf16[r.begin * B2];
      if (!gathered)
        k_.gemm_bf16(len, K_, B2, gt, B2, w_.hidden_pairs.data(), 2 * ldh_,
                     p_.grad_row(static_cast<std::uint32_t>(c0 + r.begin)), p_.stride, true);
      else
        k_.gemm_bf16(len, K_, B2, gt, B2, w_.hidden_pairs.data(), 2 * ldh_, &w_.weight_grad[r.begin * ldh_], ldh_,
                     false);
      add_chunk_gradients(t, c0, r);
    });
  }

  void output_gradients() {
    const std::size_t chunk = std::min(N_, kChunk);
    ldc_ = chunk_stride(chunk);
    w_.logits.resize(B_ * ldc_);
    w_.bias.resize(chunk);
    w_.bias_grad.resize(chunk);
    if (bf16_) {
      w_.weights_bf16.resize(chunk * ldh_);
      w_.weight_words_t.resize(K2_ / 2 * ldc_);
      w_.weight_pairs.resize((chunk + 1) / 2 * 2 * ldh_);
      w_.logits_bf16.resize(B_ * ldc_);
      w_.logits_t_bf16.resize(chunk * (B_ + (B_ & 1)));
    } else {
      w_.logits_t.resize(chunk * B_);
      w_.weights_t.resize(K_ * ldc_);
      if (ids_ || p_.has_bf16()) w_.weights.resize(chunk * ldh_);
    }
    if (ids_) w_.weight_grad.resize(chunk * ldh_);
    w_.hidden_delta.assign(B_ * ldh_, 0.0f);
    w_.row_max.assign(B_, -std::numeric_limits<float>::infinity());
    w_.row_sum.assign(B_, 0.0f);
    w_.loss.assign(B_, 0.0f);
    if (decoupled_) w_.label_logit.assign(w_.labels.size(), -std::numeric_limits<float>::infinity());
    const bool one_pass = N_ <= chunk;
    compact_ = keep_compact_ && ids_ && !step_ && !comm_ && one_pass;
    if (!compact_ && !step_) p_.ensure_gradients();  // the rows' gradients go to the accumulators
    if (!one_pass) {
      w_.scratch.resize(static_cast<std::size_t>(T_) * ldc_);
      for (std::size_t c0 = 0; c0 < N_; c0 += chunk) {
        chunk_logits(c0, std::min(chunk, N_ - c0));
        accumulate_normalisers(c0, std::min(chunk, N_ - c0), false);
      }
    } else if (N_ > 0) {
      chunk_logits(0, N_);
      accumulate_normalisers(0, N_, true);
    }
    combine_normalisers();
    for (std::size_t c0 = 0; c0 < N_; c0 += chunk) {
      const std::size_t nc = std::min(chunk, N_ - c0);
      if (!one_pass) chunk_logits(c0, nc);
      chunk_loss_gradient(c0, nc, one_pass);
      chunk_backward(c0, nc);
    }
    if (compact_) w_.compact_rows = N_;
    if (comm_) {  // each rank takes back dL/d hidden of its own samples, summed over the shards
      std::vector<std::size_t> counts(w_.rank_samples.size());
      for (std::size_t r = 0; r < counts.size(); ++r) counts[r] = w_.rank_samples[r] * ldh_;
      w_.held_delta.resize(std::max<std::size_t>(1, w_.held * ldh_));
      comm_->sum_scatter(w_.hidden_delta.data(), counts, w_.held_delta.data());
    }
  }

  // Each sample's softmax normaliser over every shard: the max of the shards' maxima, and their
  // sums of exp rescaled to it; then the loss's denominators (log_denominator) and row_scale, which
  // turns a one-pass chunk's exp(z - this shard's max) into dL/dz.
  void combine_normalisers() {
    w_.row_scale.resize(B_);
    w_.log_denominator.resize(B_);
    if (comm_) {
      w_.local_max = w_.row_max;
      comm_->max(w_.row_max.data(), B_);
      const float none = -std::numeric_limits<float>::infinity();  // a shard with no neuron in the set
      for (std::size_t b = 0; b < B_; ++b)
        if (w_.local_max[b] != none) w_.row_sum[b] *= std::exp(w_.local_max[b] - w_.row_max[b]);
      comm_->sum(w_.row_sum.data(), B_);
      if (decoupled_) comm_->max(w_.label_logit.data(), w_.label_logit.size());  // each label is in one shard
    }
    if (decoupled_) decoupled_terms_of_samples();
    for (std::size_t b = 0; b < B_; ++b) {
      if (!decoupled_) w_.log_denominator[b] = w_.row_max[b] + std::log(w_.row_sum[b]);
      if (!comm_)
        w_.row_scale[b] = decoupled_ ? static_cast<float>(w_.decoupled[b].scale) : 1.0f / w_.row_sum[b];
      else
        w_.row_scale[b] = w_.local_max[b] == -std::numeric_limits<float>::infinity()
                              ? 0.0f
                              : std::exp(w_.local_max[b] - w_.log_denominator[b]);
    }
  }

  // OutputLoss::kDecoupled: each label's exp(logit - row max), each sample's terms, and its
  // denominator: a non-label's dL/dz = e_n x scale = exp(z - (row max - log scale)).
  void decoupled_terms_of_samples() {
    w_.label_exp.resize(w_.labels.size());
    w_.decoupled.resize(B_);
    for (std::size_t b = 0; b < B_; ++b) {
      const std::size_t r0 = static_cast<std::size_t>(w_.label_ptr[b]), r1 = static_cast<std::size_t>(w_.label_ptr[b + 1]);
      for (std::size_t q = r0; q < r1; ++q)
        w_.label_exp[q] = std::exp(static_cast<double>(w_.label_logit[q]) - static_cast<double>(w_.row_max[b]));
      w_.decoupled[b] = decoupled_terms(w_.label_exp.data() + r0, r1 - r0, static_cast<double>(w_.row_sum[b]));
      w_.log_denominator[b] = static_cast<float>(static_cast<double>(w_.row_max[b]) - std::log(w_.decoupled[b].scale));
    }
  }

  // The row of this shard holding global output `label`, or kAbsent (dense output layer).
  std::uint32_t held_row(std::uint32_t label) const {
    return label >= shard_.offset && label - shard_.offset < p_.rows ? label - shard_.offset
                                                                     : SharedActiveSet::kAbsent;
  }

  // Under MPI: every rank's samples (top hidden activations, buckets and labels) to every rank, in
  // rank order, so each shard scores the whole batch.
  void share_samples() {
    const std::size_t held = B_, L = static_cast<std::size_t>(L_);
    std::vector<std::uint32_t>& out = w_.packed;
    out.assign(1, static_cast<std::uint32_t>(held));
    for (std::size_t b = 0; b < held; ++b) {
      const std::size_t at = out.size();
      out.resize(at + K_);
      std::memcpy(&out[at], &w_.hidden[b * ldh_], K_ * sizeof(float));
    }
    out.insert(out.end(), w_.buckets.begin(), w_.buckets.begin() + static_cast<std::ptrdiff_t>(held * L));
    for (std::size_t b = 0; b < held; ++b)
      out.push_back(static_cast<std::uint32_t>(w_.label_ptr[b + 1] - w_.label_ptr[b]));
    out.insert(out.end(), w_.labels.begin(), w_.labels.end());
    comm_->gather(out.data(), out.size() * sizeof(std::uint32_t), w_.gathered, w_.gathered_bytes);

    const std::size_t ranks = w_.gathered_bytes.size();
    w_.rank_samples.assign(ranks, 0);
    std::size_t total = 0;
    for (std::size_t r = 0, at = 0; r < ranks; at += w_.gathered_bytes[r], ++r) {
      std::uint32_t n;
      std::memcpy(&n, w_.gathered.data() + at, sizeof(n));
      w_.rank_samples[r] = n;
      if (static_cast<int>(r) == comm_->rank()) w_.first = total;
      total += n;
    }
    w_.held = held;
    B_ = total;
    w_.hidden.assign(B_ * ldh_, 0.0f);
    w_.buckets.resize(B_ * L);
    w_.labels.clear();
    w_.label_ptr.assign(1, 0);
    std::size_t b = 0;
    for (std::size_t r = 0, at = 0; r < ranks; at += w_.gathered_bytes[r], ++r) {
      const std::uint8_t* part = w_.gathered.data() + at;
      const std::size_t n = w_.rank_samples[r];
      const std::uint8_t* hidden = part + sizeof(std::uint32_t);
      const std::uint8_t* buckets = hidden + n * K_ * sizeof(float);
      const std::uint8_t* counts = buckets + n * L * sizeof(std::uint32_t);
      const std::uint8_t* labels = counts + n * sizeof(std::uint32_t);
      for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(&w_.hidden[(b + i) * ldh_], hidden + i * K_ * sizeof(float), K_ * sizeof(float));
        std::uint32_t c;
        std::memcpy(&c, counts + i * sizeof(c), sizeof(c));
        const std::size_t start = w_.labels.size();
        w_.labels.resize(start + c);
        if (c) std::memcpy(&w_.labels[start], labels, c * sizeof(std::uint32_t));
        labels += c * sizeof(std::uint32_t);
        w_.label_ptr.push_back(static_cast<std::int64_t>(w_.labels.size()));
      }
      if (L && n) std::memcpy(&w_.buckets[b * L], buckets, n * L * sizeof(std::uint32_t));
      b += n;
    }
  }

  Network& net_;
  const OptimizerStep* const step_;  // set: sampled rows step as their gradient is gathered
  const bool keep_compact_;
  bool compact_ = false;  // this batch's row gradients stay in weight_grad and bias_grad
  std::atomic<std::int64_t> nonfinite_{0};
  BatchWorkspace& w_;
  FcLayer& out_;
  Parameters& p_;
  const Kernels& k_;
  const int T_;
  const std::size_t K_, ldh_;
  Collective* const comm_;
  const OutputShard shard_;
  const bool bf16_;       // bf16_matmul on a CPU that multiplies BF16 in hardware
  const bool decoupled_;  // the loss is OutputLoss::kDecoupled
  const std::size_t K2_;  // K rounded up to even: the BF16 products' depth over hidden units
  std::size_t B_ = 0, N_ = 0, ldc_ = 0;
  int L_ = 0;
  const std::uint32_t* ids_ = nullptr;
};

}  // namespace

BatchStats output_batch_gradients(Network& net, std::size_t samples, const OptimizerStep* step, bool keep_compact) {
  return OutputBatch(net, step, keep_compact).run(samples);
}

}  // namespace slide
