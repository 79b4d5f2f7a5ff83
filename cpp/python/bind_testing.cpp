// slide._core.testing: hooks that let the test suite reach engine machinery no user call can
// drive on demand (an exception inside a parallel region, the team OpenMP really gives) and the
// pieces that property tests hold against simple reference implementations (hash tables, both
// active-set builders, top-k).
#include <pybind11/stl.h>

#include <new>
#include <stdexcept>
#include <vector>

#include "common/check.h"
#include "common/parallel.h"
#include "lsh/hash_tables.h"
#include "nn/active_set.h"
#include "nn/shared_active_set.h"
#include "python/bindings.h"
#include "python/csr_arrays.h"
#include "train/quantized_scan.h"
#include "train/step_team.h"
#include "train/top_k.h"

namespace slide::python {

namespace {

using U32Array = py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>;

// Tables over n items whose bucket in table t is codes[t, i], inserted in `order`.
HashTables make_tables(const U32Array& codes, const U32Array& order, int range_bits, int bucket_size,
                       bool reservoir, std::uint64_t seed, int threads) {
  SLIDE_REQUIRE(codes.ndim() == 2 && order.ndim() == 1 && order.shape(0) == codes.shape(1),
                "codes must be (tables, items) and order (items,)");
  SLIDE_REQUIRE(range_bits >= 1 && range_bits <= 24 && bucket_size >= 1, "bad table shape");
  const auto items = static_cast<std::uint32_t>(codes.shape(1));
  for (py::ssize_t i = 0; i < codes.size(); ++i)
    SLIDE_REQUIRE(codes.data()[i] < (1u << range_bits), "a code is outside the table");
  std::vector<bool> seen(items, false);
  for (std::uint32_t i = 0; i < items; ++i) {
    SLIDE_REQUIRE(order.data()[i] < items && !seen[order.data()[i]], "order must be a permutation");
    seen[order.data()[i]] = true;
  }
  HashTables tables(static_cast<int>(codes.shape(0)), range_bits, bucket_size,
                    reservoir ? BucketPolicy::kReservoir : BucketPolicy::kFifo, items);
  tables.build(codes.data(), order.data(), seed, threads);
  return tables;
}

// Each table's buckets as lists of ids, in stored order.
std::vector<std::vector<std::vector<std::uint32_t>>> table_contents(const HashTables& tables) {
  std::vector<std::vector<std::vector<std::uint32_t>>> out(tables.tables());
  for (int t = 0; t < tables.tables(); ++t)
    for (std::uint32_t b = 0; b < tables.num_buckets(); ++b) {
      std::uint32_t size;
      const std::uint32_t* ids = tables.bucket(t, b, &size);
      out[t].emplace_back(ids, ids + size);
    }
  return out;
}

void check_queries(const HashTables& tables, const U32Array& queries) {
  SLIDE_REQUIRE(queries.ndim() == 2 && queries.shape(1) == tables.tables(), "queries must be (n, tables)");
  for (py::ssize_t i = 0; i < queries.size(); ++i)
    SLIDE_REQUIRE(queries.data()[i] < tables.num_buckets(), "a query bucket is outside the table");
}

}  // namespace

void bind_testing(py::module_& m) {
  py::module_ t = m.def_submodule("testing", "Test hooks; not part of slide's API.");
  t.def(
      "team_size",
      [](int threads) {
        int size = 0;
        parallel_team(threads, [&](int thread, int team) {
          if (thread == 0) size = team;
        });
        return size;
      },
      "How many threads OpenMP gives a region that asks for `threads`.");
  t.def(
      "step_team",
      [](Network& net, const IndptrArray& xp, const IndexArray& xi, const FloatArray& xd, const RowArray& rows) {
        const CsrFloat x = features_view(xp, xi, xd, net.config().input_dim, &rows);
        const std::int64_t work = step_work(net, x, rows.data(), static_cast<std::int64_t>(rows.size()));
        const StepTeam team(net, work);
        return py::make_tuple(work, net.step_threads());
      },
      py::arg("network"), py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("rows"),
      "(forward multiply-adds, threads) of a training step over these rows of a CSR matrix.");
  t.def(
      "fail_in_parallel_region",
      [](int threads, int failing_thread, bool bad_alloc, bool dynamic_loop) {
        auto fail = [&] {
          if (bad_alloc) throw std::bad_alloc();
          throw std::invalid_argument("thrown inside a parallel region");
        };
        py::gil_scoped_release release;
        if (dynamic_loop) {
          parallel_for(
              threads, 1000, 1, [] { return 0; },
              [&](int&, std::int64_t i) {
                if (i == failing_thread) fail();
              });
        } else {
          parallel_team(threads, [&](int thread, int) {
            if (thread == failing_thread) fail();
          });
        }
      },
      py::arg("threads"), py::arg("failing_thread"), py::arg("bad_alloc"), py::arg("dynamic_loop"),
      "Throws from one thread of a region (or one iteration of a loop); the caller sees the exception.");
  t.def(
      "hash_tables",
      [](const U32Array& codes, const U32Array& order, int range_bits, int bucket_size, bool reservoir,
         std::uint64_t seed, int threads) {
        return table_contents(make_tables(codes, order, range_bits, bucket_size, reservoir, seed, threads));
      },
      "Builds tables and returns [table][bucket] -> ids.");
  t.def(
      "active_sets",
      [](const U32Array& codes, const U32Array& order, int range_bits, int bucket_size, const U32Array& queries,
         const std::vector<std::vector<std::int32_t>>& labels, int min_active, int max_active, std::uint64_t seed) {
        const HashTables tables = make_tables(codes, order, range_bits, bucket_size, false, seed, 1);
        check_queries(tables, queries);
        SLIDE_REQUIRE(labels.size() == static_cast<std::size_t>(queries.shape(0)), "one label list per query");
        for (const auto& row : labels)
          for (std::int32_t id : row) SLIDE_REQUIRE(id >= 0 && static_cast<std::uint32_t>(id) < tables.num_items(), "label");
        ActiveSetBuilder builder(tables.num_items(), tables.tables());
        Rng rng(seed);
        std::vector<std::vector<std::uint32_t>> out(labels.size());
        for (std::size_t q = 0; q < labels.size(); ++q)
          builder.build(tables, queries.data(static_cast<py::ssize_t>(q), 0), labels[q].data(),
                        static_cast<int>(labels[q].size()), NegativePool{}, min_active, max_active, rng, out[q]);
        return out;
      },
      "One per-sample active set per query row (SLIDE's builder, one builder reused across queries).");
  t.def(
      "shared_active_set",
      [](const U32Array& codes, const U32Array& order, int range_bits, int bucket_size, const U32Array& queries,
         const std::vector<std::uint32_t>& labels, std::size_t max_candidates, std::size_t min_size, int threads,
         std::uint64_t seed) {
        const HashTables tables = make_tables(codes, order, range_bits, bucket_size, false, seed, 1);
        check_queries(tables, queries);
        for (std::uint32_t id : labels) SLIDE_REQUIRE(id < tables.num_items(), "label");
        SharedActiveSet set(tables.num_items(), OutputShard{}, tables.num_items(), threads);
        Rng rng(seed);
        std::vector<std::vector<std::uint32_t>> out;
        for (int round = 0; round < 2; ++round) {  // twice: the second build must not see the first's counts
          set.build(tables, queries.data(), static_cast<std::size_t>(queries.shape(0)), labels, max_candidates,
                    min_size, rng, nullptr);
          out.push_back(set.ids());
        }
        return out;
      },
      "The batch-shared active set, built twice in a row from the same input.");
  t.def(
      "top_k",
      [](const std::vector<float>& scores, int k) {
        SLIDE_REQUIRE(k >= 1, "k must be >= 1");
        TopK best(k);
        for (std::size_t i = 0; i < scores.size(); ++i) best.push(static_cast<std::int32_t>(i), scores[i]);
        std::vector<std::int32_t> ids(k);
        std::vector<float> values(k);
        best.write(ids.data(), values.data());
        return py::make_tuple(ids, values);
      },
      "The top k of scores (ids are positions).");
  using F2 = py::array_t<float, py::array::c_style | py::array::forcecast>;
  t.def(
      "quantized_top_k",
      [](const F2& weight, const F2& bias, const F2& hidden, int k) {
        SLIDE_REQUIRE(weight.ndim() == 2 && hidden.ndim() == 2 && bias.ndim() == 1 &&
                          weight.shape(1) == hidden.shape(1) && bias.shape(0) == weight.shape(0),
                      "weight (rows, width), bias (rows,) and hidden (samples, width) must agree");
        SLIDE_REQUIRE(k >= 1 && k <= weight.shape(0), "k must be in [1, rows]");
        const auto rows = static_cast<std::uint32_t>(weight.shape(0)), width = static_cast<std::uint32_t>(weight.shape(1));
        const auto n = static_cast<std::size_t>(hidden.shape(0));
        Parameters p(rows, width, OptimizerKind::kSgd);
        for (std::uint32_t i = 0; i < rows; ++i) {
          std::copy(weight.data() + static_cast<std::size_t>(i) * width, weight.data() + static_cast<std::size_t>(i + 1) * width, p.row(i));
          p.bias[i] = bias.data()[i];
        }
        std::vector<TopK> best(n, TopK(k));
        py::array_t<std::int32_t> ids({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(k)});
        py::array_t<float> scores({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(k)});
        if (!quantized_top_k(quantize_rows(p, 1), p, hidden.data(), n, best)) return py::object(py::none());
        for (std::size_t b = 0; b < n; ++b) best[b].write(ids.mutable_data() + b * k, scores.mutable_data() + b * k);
        return py::object(py::make_tuple(ids, scores));
      },
      "The int8 scan's exact top-k of hidden @ weight.T + bias per sample, or None where it declines.");
}

}  // namespace slide::python
