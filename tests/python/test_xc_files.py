"""The C++ parser of Extreme Classification files against a plain Python reference."""

import gzip
import os
import time

import numpy as np
import pytest
import scipy.sparse as sp

from slide.datasets import make_extreme_classification
from slide.datasets.errors import DataFormatError
from slide.datasets.xc_files import load_xc, parse_xc_bytes, write_xc


def reference_parse(text: str):
    """Straightforward reading of the format (no validation beyond what it needs)."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    n, f, l = map(int, lines[0].split())
    rows, labels = [], []
    for line in lines[1:]:
        head, _, rest = line.partition(" ")
        labels.append([int(x) for x in head.split(",")] if head else [])
        rows.append([(int(a), float(b)) for a, b in (t.split(":") for t in rest.split())])
    assert len(rows) == n
    X = sp.lil_matrix((n, f), dtype=np.float32)
    Y = sp.lil_matrix((n, l), dtype=np.float32)
    for i, (r, ls) in enumerate(zip(rows, labels)):
        for j, v in r:
            X[i, j] = v
        for j in ls:
            Y[i, j] = 1
    return X.tocsr(), Y.tocsr()


def assert_same(split, X, Y):
    assert split.X.shape == X.shape and split.Y.shape == Y.shape
    assert abs(split.X - X).max() < 1e-6 if X.nnz else split.X.nnz == 0
    assert (split.Y != Y).nnz == 0


ODD_FILES = {
    "plain": "3 6 4\n0,2 1:0.5 3:1.25\n1 0:2\n3 5:1e-3\n",
    "empty label field": "2 6 4\n 1:0.5 3:1\n1 0:2\n",
    "crlf": "2 6 4\r\n0 1:0.5\r\n1,3 2:3\r\n",
    "trailing blank lines": "2 6 4\n0 1:0.5\n1 2:3\n\n\n",
    "no trailing newline": "2 6 4\n0 1:0.5\n1 2:3",
    "labels only": "2 6 4\n0,1\n2 4:1\n",
    "neither labels nor features": "2 6 4\n \n2 4:1\n",
    "tabs and extra spaces": "2 6 4\n0  1:0.5\t3:2 \n1 2:3\n",
    "scientific and negative values": "1 6 4\n0 1:-2.5E+2 2:.5 3:7\n",
}


@pytest.mark.parametrize("name", list(ODD_FILES))
def test_odd_but_valid_files_match_the_reference(name, tmp_path):
    text = ODD_FILES[name]
    path = tmp_path / "data.txt"
    path.write_bytes(text.encode())
    assert_same(load_xc(path, cache=False), *reference_parse(text))


BAD_FILES = [
    ("", 1, "header"),
    ("2 6\n", 1, "num_labels"),
    ("2 6 4 9\n", 1, "exactly three"),
    ("x 6 4\n", 1, "num_points"),
    ("2 6 4\n0 1:0.5\n", 3, "promises 2 points but the file ends after 1"),
    ("3 6 4\n0 1:0.5\n\n\n", 3, "promises 3 points but the file ends after 1"),
    ("1 6 4\n0 1:1e39\n", 2, "not a finite float32"),
    ("1 6 4\n0 1:1e400\n", 2, "not a finite float32"),  # beyond double, too
    ("1 6 4\n0 1:-1e309 2:1e-999\n", 2, "not a finite float32"),
    ("1 6 4\n0 1:nan\n", 2, "not a finite float32"),
    ("1 6 4\n0 1:0.5\n1 2:3\n", 3, "more points than the header"),
    ("2 6 4\n0 1:0.5\n\n1 2:3\n", 3, "blank line in the middle"),
    ("1 6 4\n0 1:abc\n", 2, "expected a number after '1:'"),
    ("1 6 4\n0 1;0.5\n", 2, "expected ':' after feature id 1"),
    ("1 6 4\n0 9:0.5\n", 2, "feature id 9 is out of range [0, 6)"),
    ("1 6 4\n7 1:0.5\n", 2, "label id 7 is out of range [0, 4)"),
    ("1 6 4\n-1 1:0.5\n", 2, "label id (a non-negative integer)"),
    ("1 6 4\n0 -3:0.5\n", 2, "feature id (a non-negative integer)"),
    ("1 6 4\n0,0 1:0.5\n", 2, "label id 0 is repeated"),
    ("1 6 4\n0 1:0.5 1:2\n", 2, "feature id 1 is repeated"),
    ("1 6 4\n0 1:inf\n", 2, "not a finite float32"),
    ("1 6 4\n0 1:1e-60\n", 0, None),  # underflows to 0: valid
    ("1 6 4\n0 1:1e-922\n", 0, None),  # below double's range too: 0, not refused
    ("1 6 4\n0 1:-0.00001e-310\n", 0, None),  # a double subnormal
    ("1 6 4\n0;1 1:2\n", 2, "expected ',' or a space"),
    ("1 6 4\n0 1:2\x00\x01\n", 2, "expected a number"),
]


@pytest.mark.parametrize("text, line, message", BAD_FILES)
def test_malformed_files_name_file_line_and_expectation(text, line, message, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(text.encode())
    if message is None:
        assert load_xc(path, cache=False).X.nnz == 1
        return
    with pytest.raises(DataFormatError) as e:
        load_xc(path, cache=False)
    assert e.value.line == line and message in str(e.value)
    assert str(e.value).startswith(f"{path}:{line}: " if line else f"{path}: ")
    assert isinstance(e.value, ValueError)


def test_generated_file_round_trip_gzip_and_cache(tmp_path):
    d = make_extreme_classification(500, 300, 200, seed=1, avg_nnz=20, avg_labels=3)
    path = tmp_path / "train.txt"
    write_xc(path, d.X, d.Y)
    ref_X, ref_Y = reference_parse(path.read_text())
    first = load_xc(path)
    assert_same(first, ref_X, ref_Y)
    assert np.allclose(first.X.toarray(), d.X.toarray(), atol=1e-5) and (first.Y != d.Y).nnz == 0
    cache = tmp_path / "train.txt.shards"
    assert (cache / "manifest.json").exists()
    assert_same(load_xc(path), ref_X, ref_Y)  # from the cache
    gz = tmp_path / "train.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert_same(load_xc(gz), ref_X, ref_Y)


def test_cache_is_invalidated_when_the_source_changes(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("1 6 4\n0 1:0.5\n")
    assert load_xc(path).X[0, 1] == pytest.approx(0.5)
    time.sleep(0.01)
    path.write_text("1 6 4\n0 1:0.75\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert load_xc(path).X[0, 1] == pytest.approx(0.75)


def test_a_damaged_cache_is_ignored(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("1 6 4\n0 1:0.5\n")
    load_xc(path)
    (tmp_path / "d.txt.shards" / "part-00000.shard").write_bytes(b"junk")
    assert load_xc(path).X[0, 1] == pytest.approx(0.5)


def test_missing_file_and_broken_gzip(tmp_path):
    with pytest.raises(FileNotFoundError, match="no data file at"):
        load_xc(tmp_path / "nope.txt")
    bad = tmp_path / "x.txt.gz"
    bad.write_bytes(gzip.compress(b"1 6 4\n0 1:0.5\n")[:-12])
    with pytest.raises(DataFormatError, match="gzip"):
        load_xc(bad, cache=False)


def test_parse_bytes_directly():
    split = parse_xc_bytes(b"1 3 2\n1 2:4\n")
    assert split.X[0, 2] == 4 and split.Y[0, 1] == 1
