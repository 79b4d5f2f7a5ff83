"""Multi-label ARFF (Mulan, MEKA): files the tests write, read back exactly; malformed files named."""

import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from slide.datasets import DataFormatError, load_arff

FEATURES, LABELS = ["w0", "w1", "w2", "w3"], ["tag_a", "tag b", "tag_c"]
X = np.array([[1, 0, 0.5, 0], [0, 0, 0, 0], [0, 2, 0, 1]], dtype=np.float32)
Y = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0]], dtype=np.float32)


def header(names, relation="test", label_kind="{0,1}"):
    lines = [f"@relation {relation}", ""]
    for n in names:
        kind = label_kind if n in LABELS else "numeric"
        lines.append(f"@attribute '{n}' {kind}" if " " in n else f"@attribute {n} {kind}")
    return lines + ["", "@data"]


def sparse_rows(mat):
    return ["{" + ",".join(f"{j} {v:g}" for j, v in enumerate(row) if v) + "}" for row in mat]


def write(path, lines, xml_labels=None):
    path.write_text("\n".join(lines) + "\n")
    if xml_labels is not None:
        items = "".join(f'<label name="{n}"></label>' for n in xml_labels)
        path.with_suffix(".xml").write_text(f'<?xml version="1.0"?><labels xmlns="http://mulan.sourceforge.net/labels">'
                                            f"{items}</labels>")
    return path


def check(split):
    np.testing.assert_array_equal(split.X.toarray(), X)
    np.testing.assert_array_equal(split.Y.toarray(), Y)
    assert sp.isspmatrix_csr(split.X) and split.X.dtype == np.float32


def test_mulan_sparse_with_xml(tmp_path):
    check(load_arff(write(tmp_path / "d.arff", header(FEATURES + LABELS) + sparse_rows(np.hstack([X, Y])), LABELS)))


def test_dense_rows_and_label_count(tmp_path):
    rows = [",".join(f"{v:g}" for v in r) for r in np.hstack([X, Y])]
    check(load_arff(write(tmp_path / "d.arff", header(FEATURES + LABELS) + rows), labels=3))


def test_meka_labels_first_from_relation(tmp_path):
    data = np.hstack([Y, X])
    path = write(tmp_path / "m.arff", header(LABELS + FEATURES, relation="'meka: -C 3'") + sparse_rows(data))
    check(load_arff(path))
    check(load_arff(path, labels=-3))


def test_labels_by_name_in_any_position(tmp_path):
    names = ["tag_c", "w0", "tag_a", "w1", "w2", "tag b", "w3"]
    order = {n: i for i, n in enumerate(FEATURES + LABELS)}
    data = np.hstack([X, Y])[:, [order[n] for n in names]]
    check(load_arff(write(tmp_path / "p.arff", header(names) + sparse_rows(data)), labels=LABELS))


def test_gzip_and_comments(tmp_path):
    lines = ["% a comment"] + header(FEATURES + LABELS) + ["% rows follow"] + sparse_rows(np.hstack([X, Y]))
    path = tmp_path / "d.arff.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    check(load_arff(path, labels=3))


@pytest.mark.parametrize("row, message", [
    ("{0 1,9 1}", "attribute index '9' is not in [0, 6]"),
    ("{0 1,0 1}", "attribute 0 appears twice"),
    ("{0 1,4 2}", "label attribute 4 has value 2"),
    ("{0 x}", "value 'x' is not a number"),
    ("{0 1", "must end with '}'"),
    ("1,0,0", "expected 7 comma-separated values, got 3"),
    ("{0}", "expected 'INDEX VALUE'"),
])
def test_malformed_rows_name_the_line(tmp_path, row, message):
    lines = header(FEATURES + LABELS) + sparse_rows(np.hstack([X, Y])[:1]) + [row]
    with pytest.raises(DataFormatError, match=rf"b\.arff:{len(lines)}: .*{__import__('re').escape(message)}"):
        load_arff(write(tmp_path / "b.arff", lines), labels=3)


def test_unknown_labels_missing_data_and_types(tmp_path):
    plain = write(tmp_path / "n.arff", header(FEATURES + LABELS) + sparse_rows(np.hstack([X, Y])))
    with pytest.raises(DataFormatError, match="cannot tell which attributes are labels"):
        load_arff(plain)
    with pytest.raises(DataFormatError, match=r"\['nope'\] are not attributes"):
        load_arff(plain, labels=["nope"])
    with pytest.raises(ValueError, match="label count must be in"):
        load_arff(plain, labels=7)
    with pytest.raises(DataFormatError, match="no @data line"):
        load_arff(write(tmp_path / "h.arff", header(FEATURES)[:-1]), labels=1)
    with pytest.raises(DataFormatError, match="has type 'string'"):
        load_arff(write(tmp_path / "s.arff", ["@relation r", "@attribute t string", "@data"]), labels=1)
    with pytest.raises(FileNotFoundError):
        load_arff(tmp_path / "absent.arff", labels=1)


def test_cli_trains_on_arff_files_with_shape_defaults(tmp_path, capsys):
    """`slide train --train A.arff --test B.arff` reads ARFF and, with 3 labels, picks a dense output."""
    from slide.cli import main

    rng = np.random.default_rng(0)
    feats = rng.random((60, 4)) < 0.5
    labels = np.stack([feats[:, 0], feats[:, 1] & ~feats[:, 0], ~feats[:, 0] & ~feats[:, 1]], axis=1)
    for name in ("train", "test"):
        write(tmp_path / f"{name}.arff", header(FEATURES + LABELS) + sparse_rows(np.hstack([feats, labels]) * 1.0),
              LABELS)
    code = main(["train", "--train", str(tmp_path / "train.arff"), "--test", str(tmp_path / "test.arff"),
                 "--epochs", "2", "--out", str(tmp_path / "run"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "settings from the data's shape: 3 labels <= 8,192: dense output" in out
    assert "dense" in out.split("Network(")[1].split(")")[0]


def test_attribute_names_quoted_and_literal(tmp_path):
    """Mulan's Delicious has unquoted names with backslashes, matched literally by its XML file."""
    lines = ["@relation r", "@attribute 'w 0' numeric", "@attribute 'it\\'s' numeric", "@attribute TAG_m\\'usica {0,1}",
             "@data", "{0 1,1 3,2 1}"]
    split = load_arff(write(tmp_path / "q.arff", lines, ["TAG_m\\'usica"]))
    np.testing.assert_array_equal(split.X.toarray(), [[1, 3]])
    np.testing.assert_array_equal(split.Y.toarray(), [[1]])
    with pytest.raises(DataFormatError, match="label attribute 1 has value 3"):
        load_arff(tmp_path / "q.arff", labels=["it's"])
