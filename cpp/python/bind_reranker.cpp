// The shortlist re-ranker (slide.reranker): its weight arrays are NumPy's, updated in place;
// every array is checked before the GIL is released.
#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "python/bindings.h"
#include "python/csr_arrays.h"
#include "rerank/dual_cd_hinge.h"
#include "rerank/label_points.h"
#include "rerank/shortlist_reranker.h"

namespace slide::python {

namespace {

using MutableFloats = py::array_t<float, py::array::c_style>;
using CandidateArray = py::array_t<std::int32_t, py::array::c_style>;

// (weight, sum of squared gradients) pairs: slots [size, 2] with size a power of two, bias [labels, 2].
RerankerWeights weights_view(MutableFloats& slots, MutableFloats& bias) {
  SLIDE_REQUIRE(slots.ndim() == 2 && slots.shape(1) == 2 && slots.shape(0) > 0 &&
                    (slots.shape(0) & (slots.shape(0) - 1)) == 0,
                "the re-ranker's slots must be [size, 2] with a power-of-two size");
  SLIDE_REQUIRE(bias.ndim() == 2 && bias.shape(1) == 2 && bias.shape(0) > 0,
                "the re-ranker's bias must be [labels, 2]");
  return {slots.mutable_data(), slots.shape(0), bias.mutable_data(), bias.shape(0)};
}

void check_labels(const std::int32_t* ids, std::int64_t count, std::int64_t labels, bool allow_none) {
  for (std::int64_t i = 0; i < count; ++i)
    SLIDE_REQUIRE(ids[i] < labels && (ids[i] >= 0 || (allow_none && ids[i] == -1)),
                  "label id " << ids[i] << " lies outside [0, " << labels << ")");
}

}  // namespace

void bind_reranker(py::module_& m) {
  m.def(
      "reranker_scores",
      [](const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data, std::int64_t n_features,
         const py::array_t<std::int64_t, py::array::c_style>& rows, const IndexArray& labels, MutableFloats slots,
         MutableFloats bias, int threads) {
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        const CsrFloat x = features_view(indptr, indices, data, n_features, nullptr);
        const RerankerWeights w = weights_view(slots, bias);
        SLIDE_REQUIRE(rows.ndim() == 1 && labels.ndim() == 1 && rows.size() == labels.size(),
                      "rows and labels must be 1-D and of one length");
        const std::int64_t pairs = rows.size();
        const std::int64_t* r = rows.data();
        for (std::int64_t p = 0; p < pairs; ++p)
          SLIDE_REQUIRE(r[p] >= 0 && r[p] < x.rows, "row " << r[p] << " lies outside [0, " << x.rows << ")");
        check_labels(labels.data(), pairs, w.labels, false);
        py::array_t<float> out(pairs);
        float* o = out.mutable_data();
        {
          py::gil_scoped_release release;
          reranker_scores(x, r, labels.data(), pairs, w, o, threads);
        }
        return out;
      },
      py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n_features"), py::arg("rows"),
      py::arg("labels"), py::arg("slots"), py::arg("bias"), py::arg("threads"), "The re-ranker's score of each (row of x, label) pair.");
  m.def(
      "reranker_epoch",
      [](const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data, std::int64_t n_features,
         const IndptrArray& y_indptr, const IndexArray& y_indices, const CandidateArray& candidates,
         const py::array_t<std::int64_t, py::array::c_style>& order, MutableFloats slots, MutableFloats bias,
         float lr, int threads) {
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        SLIDE_REQUIRE(lr > 0.0f && std::isfinite(lr), "the re-ranker's learning rate must be positive, got " << lr);
        const CsrFloat x = features_view(indptr, indices, data, n_features, nullptr);
        const RerankerWeights w = weights_view(slots, bias);
        const CsrIds y = labels_view(y_indptr, y_indices, w.labels, nullptr);
        SLIDE_REQUIRE(y.rows == x.rows, "x has " << x.rows << " rows but y has " << y.rows);
        SLIDE_REQUIRE(candidates.ndim() == 2 && candidates.shape(0) == x.rows,
                      "candidates must be 2-D with one row per row of x");
        const int width = static_cast<int>(candidates.shape(1));
        check_labels(candidates.data(), candidates.size(), w.labels, true);
        SLIDE_REQUIRE(order.ndim() == 1, "order must be 1-D");
        const std::int64_t* o = order.data();
        for (std::int64_t i = 0; i < order.size(); ++i)
          SLIDE_REQUIRE(o[i] >= 0 && o[i] < x.rows, "order holds row " << o[i] << ", outside [0, " << x.rows << ")");
        py::gil_scoped_release release;
        return reranker_epoch(x, y, candidates.data(), width, o, order.size(), w, lr, threads);
      },
      py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n_features"), py::arg("y_indptr"),
      py::arg("y_indices"), py::arg("candidates"), py::arg("order"), py::arg("slots"), py::arg("bias"),
      py::arg("lr"), py::arg("threads"),
      "One epoch of the re-ranker over each row's shortlist (its candidates and its labels); the mean loss.");
  m.def(
      "reranker_dual_cd",
      [](const IndptrArray& indptr, const IndexArray& indices, const FloatArray& data, std::int64_t n_features,
         const py::array_t<std::int64_t, py::array::c_style>& label_indptr,
         const py::array_t<std::int64_t, py::array::c_style>& rows,
         const py::array_t<std::uint8_t, py::array::c_style>& positive, MutableFloats slots, MutableFloats bias,
         float c, int max_iterations, float tolerance, std::uint64_t seed, int threads, const py::object& alpha,
         float adders) {
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        SLIDE_REQUIRE(adders >= 1.0f && std::isfinite(adders), "adders must be at least 1, got " << adders);
        SLIDE_REQUIRE(c > 0.0f && std::isfinite(c), "C must be positive, got " << c);
        SLIDE_REQUIRE(max_iterations >= 1, "max_iterations must be at least 1, got " << max_iterations);
        SLIDE_REQUIRE(tolerance >= 0.0f && std::isfinite(tolerance), "tolerance must be >= 0, got " << tolerance);
        const CsrFloat x = features_view(indptr, indices, data, n_features, nullptr);
        const RerankerWeights w = weights_view(slots, bias);
        SLIDE_REQUIRE(label_indptr.ndim() == 1 && label_indptr.size() == w.labels + 1,
                      "label_indptr must hold labels + 1 = " << w.labels + 1 << " offsets");
        SLIDE_REQUIRE(rows.ndim() == 1 && positive.ndim() == 1 && rows.size() == positive.size(),
                      "rows and positive must be 1-D and of one length");
        const std::int64_t* offsets = label_indptr.data();
        SLIDE_REQUIRE(offsets[0] == 0 && offsets[w.labels] == rows.size(),
                      "label_indptr must run from 0 to the number of rows (" << rows.size() << ")");
        for (std::int64_t l = 0; l < w.labels; ++l)
          SLIDE_REQUIRE(offsets[l] <= offsets[l + 1], "label_indptr decreases at label " << l);
        const std::int64_t* r = rows.data();
        for (std::int64_t p = 0; p < rows.size(); ++p)
          SLIDE_REQUIRE(r[p] >= 0 && r[p] < x.rows, "row " << r[p] << " lies outside [0, " << x.rows << ")");
        float* duals = nullptr;
        MutableFloats kept;
        if (!alpha.is_none()) {
          // written back in place: a converted copy would lose the solver's duals
          SLIDE_REQUIRE(py::isinstance<MutableFloats>(alpha), "alpha must be a C-contiguous float32 array");
          kept = alpha.cast<MutableFloats>();
          SLIDE_REQUIRE(kept.ndim() == 1 && kept.size() == rows.size(),
                        "alpha must be 1-D with one value per row of rows (" << rows.size() << ")");
          duals = kept.mutable_data();
          for (std::int64_t p = 0; p < rows.size(); ++p)
            SLIDE_REQUIRE(duals[p] >= 0.0f && std::isfinite(duals[p]), "alpha[" << p << "] must be >= 0, got " << duals[p]);
        }
        const LabelPoints points{offsets, r, positive.data(), duals};
        const DualCdSettings settings{c, max_iterations, tolerance, seed, adders};
        py::gil_scoped_release release;
        return reranker_dual_cd(x, points, w, settings, threads);
      },
      py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("n_features"), py::arg("label_indptr"),
      py::arg("rows"), py::arg("positive"), py::arg("slots"), py::arg("bias"), py::arg("c"),
      py::arg("max_iterations"), py::arg("tolerance"), py::arg("seed"), py::arg("threads"),
      py::arg("alpha") = py::none(), py::arg("adders") = 1.0f,
      "Each label's squared hinge over its points by dual coordinate descent; the mean loss afterwards. "
      "alpha: the points' dual variables, read as the start and written back (None: all start at 0); "
      "adders: how many solvers' changes are added together (CoCoA+'s sigma').");
  m.def(
      "reranker_label_points",
      [](const CandidateArray& candidates, const IndptrArray& y_indptr, const IndexArray& y_indices,
         std::int64_t labels) {
        SLIDE_REQUIRE(labels >= 1, "labels must be at least 1, got " << labels);
        const CsrIds y = labels_view(y_indptr, y_indices, labels, nullptr);
        SLIDE_REQUIRE(candidates.ndim() == 2 && candidates.shape(0) == y.rows,
                      "candidates must be 2-D with one row per row of y (" << y.rows << ")");
        check_labels(candidates.data(), candidates.size(), labels, true);
        const Shortlists lists{candidates.data(), static_cast<int>(candidates.shape(1)), &y};
        py::array_t<std::int64_t> indptr(labels + 1);
        std::int64_t* offsets = indptr.mutable_data();
        {
          py::gil_scoped_release release;
          count_label_points(lists, labels, offsets);
        }
        py::array_t<std::int64_t> rows(offsets[labels]);
        py::array_t<std::uint8_t> positive(offsets[labels]);
        {
          py::gil_scoped_release release;
          fill_label_points(lists, labels, offsets, rows.mutable_data(), positive.mutable_data());
        }
        return py::make_tuple(indptr, rows, positive);
      },
      py::arg("candidates"), py::arg("y_indptr"), py::arg("y_indices"), py::arg("labels"),
      "(indptr, rows, positive): each label's rows (those whose candidates or labels hold it), ascending.");
}

}  // namespace slide::python
