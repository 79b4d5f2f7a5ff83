// The skip-gram word-vector trainer (train/skipgram.h): built from word counts, trained on ranges
// of a corpus's word ids without the GIL; its two matrices are NumPy views.
#include <cstdint>
#include <memory>
#include <vector>

#include "common/check.h"
#include "common/rng.h"
#include "python/bindings.h"
#include "train/skipgram.h"

namespace slide::python {

namespace {

py::array_t<float> matrix_view(SkipGram& m, float* data, py::handle owner) {
  const py::ssize_t v = m.vocab_size(), d = m.dim();
  return py::array_t<float>({v, d}, {d * static_cast<py::ssize_t>(sizeof(float)), static_cast<py::ssize_t>(sizeof(float))},
                            data, owner);
}

}  // namespace

void bind_skipgram(py::module_& m) {
  py::class_<SkipGram>(m, "SkipGram")
      .def(py::init([](const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& counts, int dim,
                       std::uint64_t seed) {
             return std::make_unique<SkipGram>(std::vector<std::int64_t>(counts.data(), counts.data() + counts.size()),
                                               dim, seed);
           }),
           py::arg("counts"), py::arg("dim"), py::arg("seed"))
      .def(
          "train",
          [](SkipGram& self, const py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>& ids,
             std::int64_t begin, std::int64_t end, float lr_begin, float lr_end, int window, int negatives,
             double subsample, int threads, std::uint64_t pass) {
            SLIDE_REQUIRE(end <= static_cast<std::int64_t>(ids.size()),
                          "word range ends at " << end << " beyond the corpus's " << ids.size() << " words");
            SkipGramOptions o;
            o.window = window;
            o.negatives = negatives;
            o.subsample = subsample;
            o.threads = threads;
            SkipGramStats s;
            {
              py::gil_scoped_release release;
              s = self.train(ids.data(), begin, end, lr_begin, lr_end, o, pass);
            }
            py::dict d;
            d["words"] = s.words;
            d["pairs"] = s.pairs;
            d["loss"] = s.loss;
            return d;
          },
          py::arg("ids"), py::arg("begin"), py::arg("end"), py::arg("lr_begin"), py::arg("lr_end"), py::arg("window"),
          py::arg("negatives"), py::arg("subsample"), py::arg("threads"), py::arg("pass_"))
      .def(
          "draw_negatives",
          [](const SkipGram& self, std::int64_t n, std::uint64_t seed) {
            py::array_t<std::int32_t> out(n);
            Rng rng(seed);
            for (std::int64_t i = 0; i < n; ++i) out.mutable_data()[i] = self.negative(rng.next());
            return out;
          },
          "n draws of the negative-word distribution (for tests)", py::arg("n"), py::arg("seed"))
      .def_property_readonly("word_vectors",
                             [](py::object self) {
                               auto& s = self.cast<SkipGram&>();
                               return matrix_view(s, s.word_vectors(), self);
                             })
      .def_property_readonly("context_vectors", [](py::object self) {
        auto& s = self.cast<SkipGram&>();
        return matrix_view(s, s.context_vectors(), self);
      });
}

}  // namespace slide::python
