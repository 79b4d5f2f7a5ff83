// Data loaders: text in (a bytes-like buffer), NumPy CSR arrays out, parsed without the GIL.
#include <memory>
#include <stdexcept>
#include <vector>

#include "data/text8.h"
#include "data/xc_parser.h"
#include "data/xc_writer.h"
#include "python/bindings.h"
#include "python/numpy_vectors.h"

namespace slide::python {

namespace {

py::dict to_dict(XcData&& d) {
  py::dict out;
  out["num_points"] = d.num_points;
  out["num_features"] = d.num_features;
  out["num_labels"] = d.num_labels;
  out["x_indptr"] = to_numpy(std::move(d.x_indptr));
  out["x_indices"] = to_numpy(std::move(d.x_indices));
  out["x_data"] = to_numpy(std::move(d.x_data));
  out["y_indptr"] = to_numpy(std::move(d.y_indptr));
  out["y_indices"] = to_numpy(std::move(d.y_indices));
  return out;
}

}  // namespace

void bind_data(py::module_& m) {
  static py::exception<ParseError> parse_error(m, "ParseError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ParseError& e) {
      // args = (line, message): the Python layer adds the file name.
      PyErr_SetObject(parse_error.ptr(), py::make_tuple(e.line(), e.what()).ptr());
    }
  });
  m.def(
      "parse_xc",
      [](const py::buffer& text) {
        py::buffer_info info = text.request();
        XcData d;
        {
          py::gil_scoped_release release;
          d = parse_xc(static_cast<const char*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize));
        }
        return to_dict(std::move(d));
      },
      py::arg("text"), "Parse an Extreme Classification Repository file's bytes into CSR arrays.");

  m.def(
      "format_xc_points",
      [](const py::array_t<std::int64_t, py::array::c_style>& x_indptr,
         const py::array_t<std::int32_t, py::array::c_style>& x_indices,
         const py::array_t<float, py::array::c_style>& x_data,
         const py::array_t<std::int64_t, py::array::c_style>& y_indptr,
         const py::array_t<std::int32_t, py::array::c_style>& y_indices) {
        const py::ssize_t rows = x_indptr.size() - 1;
        if (rows < 0 || y_indptr.size() != rows + 1 || x_indices.size() != x_data.size())
          throw std::invalid_argument("format_xc_points: CSR arrays of different row counts or lengths");
        const std::int64_t* xp = x_indptr.data();
        const std::int64_t* yp = y_indptr.data();
        for (py::ssize_t i = 0; i < rows; ++i)
          if (xp[i] > xp[i + 1] || yp[i] > yp[i + 1])
            throw std::invalid_argument("format_xc_points: offsets must not decrease");
        if (rows > 0 && (xp[0] < 0 || yp[0] < 0 || xp[rows] > x_indices.size() || yp[rows] > y_indices.size()))
          throw std::invalid_argument("format_xc_points: offsets outside the index arrays");
        std::string text;
        {
          py::gil_scoped_release release;
          text = format_xc_points(rows, xp, x_indices.data(), x_data.data(), yp, y_indices.data());
        }
        return py::bytes(text);
      },
      py::arg("x_indptr"), py::arg("x_indices"), py::arg("x_data"), py::arg("y_indptr"), py::arg("y_indices"),
      "The points of CSR arrays as Extreme Classification text lines (no header).");

  py::class_<XcStreamParser>(m, "XcStreamParser",
                             "The XC format fed in pieces that end at line breaks (the last may not).")
      .def(py::init<>())
      .def(py::init<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>(), py::arg("num_points"),
           py::arg("num_features"), py::arg("num_labels"), py::arg("lines_before"), py::arg("points_before"))
      .def(
          "feed",
          [](XcStreamParser& parser, const py::buffer& text, bool last) {
            py::buffer_info info = text.request();
            XcData d;
            {
              py::gil_scoped_release release;
              parser.feed(static_cast<const char*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize), last,
                          d);
            }
            return to_dict(std::move(d));
          },
          py::arg("text"), py::arg("last"))
      .def("restart", &XcStreamParser::restart, py::arg("lines_before"), py::arg("points_before"))
      .def_property_readonly("has_header", &XcStreamParser::has_header)
      .def_property_readonly("points_read", &XcStreamParser::points_read)
      .def_property_readonly("lines_read", &XcStreamParser::lines_read)
      .def_property_readonly("first_trailing_blank", &XcStreamParser::first_trailing_blank);

  m.def(
      "tokenize_corpus",
      [](const py::buffer& text, std::int64_t min_count, std::int64_t max_vocab) {
        py::buffer_info info = text.request();
        Corpus c;
        {
          py::gil_scoped_release release;
          c = tokenize(static_cast<const char*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize),
                       min_count, max_vocab);
        }
        py::dict out;
        py::list words;  // bytes: a corpus need not be valid UTF-8
        for (const std::string& w : c.words) words.append(py::bytes(w));
        out["words"] = words;
        out["counts"] = to_numpy(std::move(c.counts));
        out["ids"] = to_numpy(std::move(c.ids));
        out["tokens_read"] = c.tokens_read;
        return out;
      },
      py::arg("text"), py::arg("min_count"), py::arg("max_vocab"));

  m.def(
      "corpus_samples",
      [](const py::array_t<std::int32_t, py::array::c_style>& ids, const py::array_t<std::int64_t, py::array::c_style>& counts,
         std::int64_t begin, std::int64_t end, int window, double subsample, std::uint64_t seed) {
        const std::int64_t vocab = counts.size();
        const std::int32_t* p = ids.data();
        for (py::ssize_t i = 0; i < ids.size(); ++i)
          if (p[i] < 0 || p[i] >= vocab) throw std::invalid_argument("corpus ids must lie in [0, vocabulary size)");
        Samples s;
        {
          py::gil_scoped_release release;
          s = make_samples(p, ids.size(), begin, end, counts.data(), vocab, SampleOptions{window, subsample, seed});
        }
        py::dict out;
        out["x_indptr"] = to_numpy(std::move(s.x_indptr));
        out["x_indices"] = to_numpy(std::move(s.x_indices));
        out["y_indptr"] = to_numpy(std::move(s.y_indptr));
        out["y_indices"] = to_numpy(std::move(s.y_indices));
        out["positions"] = to_numpy(std::move(s.positions));
        return out;
      },
      py::arg("ids"), py::arg("counts"), py::arg("begin"), py::arg("end"), py::arg("window"), py::arg("subsample"),
      py::arg("seed"));
  m.def("keep_probability", &keep_probability, py::arg("count"), py::arg("total"), py::arg("subsample"));
}

}  // namespace slide::python
