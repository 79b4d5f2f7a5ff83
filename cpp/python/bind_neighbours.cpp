// The nearest-neighbour vote (slide.neighbours): NumPy CSR arrays in, checked before the GIL is
// released, the votes' CSR arrays out.
#include "common/check.h"
#include "neighbours/dense_neighbour_votes.h"
#include "neighbours/neighbour_votes.h"
#include "prediction/fused_top_k.h"
#include "python/bindings.h"
#include "python/csr_arrays.h"
#include "python/numpy_vectors.h"

namespace slide::python {

void bind_neighbours(py::module_& m) {
  m.def(
      "neighbour_votes",
      [](const IndptrArray& q_indptr, const IndexArray& q_indices, const FloatArray& q_data,
         const IndptrArray& f_indptr, const IndexArray& f_indices, const FloatArray& f_data,
         const IndptrArray& l_indptr, const IndexArray& l_indices, std::int64_t n_features, std::int64_t n_labels,
         int k, int threads) {
        SLIDE_REQUIRE(k >= 1, "k must be at least 1, got " << k);
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        const CsrIds labels = labels_view(l_indptr, l_indices, n_labels, nullptr);
        const CsrFloat queries = features_view(q_indptr, q_indices, q_data, n_features, nullptr);
        const CsrFloat index = features_view(f_indptr, f_indices, f_data, labels.rows, nullptr);
        SLIDE_REQUIRE(index.rows == n_features,
                      "the index has " << index.rows << " feature rows, expected " << n_features);
        NeighbourVotes v;
        {
          py::gil_scoped_release release;
          v = neighbour_votes(queries, index, labels, k, threads);
        }
        return py::make_tuple(to_numpy(std::move(v.indptr)), to_numpy(std::move(v.labels)),
                              to_numpy(std::move(v.votes)));
      },
      py::arg("q_indptr"), py::arg("q_indices"), py::arg("q_data"), py::arg("f_indptr"), py::arg("f_indices"),
      py::arg("f_data"), py::arg("l_indptr"), py::arg("l_indices"), py::arg("n_features"), py::arg("n_labels"),
      py::arg("k"), py::arg("threads"),
      "(indptr, labels, votes): each query's k nearest remembered points (largest positive dot products "
      "through the feature -> point index f_*, ties to the lower point) vote for their labels l_* with their "
      "similarity, summed per label, over k.");
  m.def(
      "dense_neighbour_votes",
      [](const FloatArray& queries, const FloatArray& points, const IndptrArray& l_indptr, const IndexArray& l_indices,
         std::int64_t n_labels, int k, int threads) {
        SLIDE_REQUIRE(k >= 1, "k must be at least 1, got " << k);
        SLIDE_REQUIRE(threads >= 1, "threads must be at least 1, got " << threads);
        SLIDE_REQUIRE(points.ndim() == 2 && points.shape(1) >= 1, "points must be a (points, width) float32 matrix");
        SLIDE_REQUIRE(queries.ndim() == 2 && queries.shape(1) == points.shape(1),
                      "queries must be a (queries, " << points.shape(1) << ") float32 matrix, as wide as the points");
        const CsrIds labels = labels_view(l_indptr, l_indices, n_labels, nullptr);
        SLIDE_REQUIRE(labels.rows == points.shape(0),
                      "the labels have " << labels.rows << " rows for " << points.shape(0) << " points");
        NeighbourVotes v;
        {
          py::gil_scoped_release release;
          v = dense_neighbour_votes(queries.data(), queries.shape(0), points.data(), points.shape(0), points.shape(1),
                                    labels, k, threads);
        }
        return py::make_tuple(to_numpy(std::move(v.indptr)), to_numpy(std::move(v.labels)),
                              to_numpy(std::move(v.votes)));
      },
      py::arg("queries"), py::arg("points"), py::arg("l_indptr"), py::arg("l_indices"), py::arg("n_labels"),
      py::arg("k"), py::arg("threads"),
      "(indptr, labels, votes): each query row's k nearest point rows (largest positive dot products over "
      "every point, ties to the lower point) vote for their labels l_* with their similarity, summed per "
      "label, over k.");
  m.def(
      "fused_top_k",
      [](const IndptrArray& starts, const IndptrArray& counts, const IndexArray& ids, const FloatArray& logits,
         const FloatArray& vote, const FloatArray& rerank, float weight, float rerank_weight, int k) {
        const std::int64_t queries = starts.size(), n = ids.size();
        SLIDE_REQUIRE(k >= 1, "k must be at least 1, got " << k);
        SLIDE_REQUIRE(counts.size() == queries, "starts and counts must have one value per query");
        SLIDE_REQUIRE(logits.size() == n && vote.size() == n && rerank.size() == n,
                      "ids, logits, vote and rerank must have one value per candidate");
        const std::int64_t* s = starts.data();
        const std::int64_t* c = counts.data();
        for (std::int64_t q = 0; q < queries; ++q)
          SLIDE_REQUIRE(s[q] >= 0 && c[q] >= 0 && c[q] <= n - s[q],
                        "query " << q << "'s candidates [" << s[q] << ", +" << c[q] << ") lie outside the " << n);
        py::array_t<std::int32_t> out_ids({static_cast<py::ssize_t>(queries), static_cast<py::ssize_t>(k)});
        py::array_t<float> out_scores({static_cast<py::ssize_t>(queries), static_cast<py::ssize_t>(k)});
        std::int32_t* oi = out_ids.mutable_data();
        float* os = out_scores.mutable_data();
        {
          py::gil_scoped_release release;
          fused_top_k(queries, s, c, ids.data(), logits.data(), vote.data(), rerank.data(), weight, rerank_weight, k,
                      oi, os);
        }
        return py::make_tuple(out_ids, out_scores);
      },
      py::arg("starts"), py::arg("counts"), py::arg("ids"), py::arg("logits"), py::arg("vote"), py::arg("rerank"),
      py::arg("weight"), py::arg("rerank_weight"), py::arg("k"),
      "(ids, scores), each queries x k: each query's k best candidates by logit + (weight x vote + "
      "rerank_weight x rerank), best first, ties to the earlier candidate, -1 / -inf where it has fewer.");
}

}  // namespace slide::python
