"""Property-based fuzzing of the loaders: generated, then damaged, Extreme Classification files and
Text8 corpora. Every input either parses to exactly what a strict, plain-Python reading of the
format gives, or is refused with a DataFormatError naming the file and the same line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from slide import _core
from slide.datasets.errors import DataFormatError
from slide.datasets.xc_files import load_xc, parse_xc_bytes

INT = re.compile(rb"[0-9]+")
FLOAT = re.compile(rb"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
SEP = re.compile(rb"[ \t]+")
INT64_MAX = 2**63 - 1


class Refused(Exception):
    def __init__(self, line: int):
        self.line = line


def _int(token: bytes, line: int) -> int:
    if not INT.fullmatch(token) or int(token) > INT64_MAX:
        raise Refused(line)
    return int(token)


def reference_parse(data: bytes):
    """The format, read strictly and slowly: (header, labels per point, features per point)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"" and data.endswith(b"\n"):
        lines.pop()  # the final newline ends the last line rather than starting another
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
    if not lines or not lines[0].strip(b" \t"):
        raise Refused(1)
    head = SEP.split(lines[0].strip(b" \t"))
    if len(head) != 3:
        raise Refused(1)
    n, nf, nl = (_int(t, 1) for t in head)
    if nf < 1 or nl < 1 or nf > 2**31 - 1 or nl > 2**31 - 1:
        raise Refused(1)
    body = lines[1:]
    last = len(body)
    while last and body[last - 1] == b"":
        last -= 1
    labels, features = [], []
    for i, text in enumerate(body[:last]):
        line = i + 2
        if text == b"":
            raise Refused(line)  # a blank line in the middle
        if len(labels) == n:
            raise Refused(line)
        rest = text
        ls: list[int] = []
        if text[:1] not in (b" ", b"\t"):
            m = re.match(rb"[^ \t]*", text)
            field, rest = m.group(0), text[m.end():]
            for token in field.split(b","):
                lab = _int(token, line)
                if lab >= nl or lab in ls:
                    raise Refused(line)
                ls.append(lab)
        fs: dict[int, float] = {}
        for token in SEP.split(rest.strip(b" \t")) if rest.strip(b" \t") else []:
            fid, colon, value = token.partition(b":")
            fid = _int(fid, line)
            if not colon or not FLOAT.fullmatch(value):
                raise Refused(line)
            v = float(value)
            with np.errstate(over="ignore"):
                if not np.isfinite(np.float32(v)):  # also beyond double range, where float() gives inf
                    raise Refused(line)
            if fid >= nf or fid in fs:
                raise Refused(line)
            fs[fid] = float(np.float32(v))
        labels.append(ls)
        features.append(fs)
    if len(labels) != n:
        raise Refused(len(labels) + 2)
    return (n, nf, nl), labels, features


def check_against_reference(data: bytes, path: str = "fuzz.txt") -> Optional[int]:
    """Parse with the engine and the reference; returns the refused line, None if accepted."""
    try:
        expected = reference_parse(data)
    except Refused as r:
        expected = r
    except OverflowError:  # float() of a literal beyond double range
        pytest.fail("reference parser crashed")
    try:
        split = parse_xc_bytes(data, path)
    except DataFormatError as e:
        assert isinstance(expected, Refused), f"engine refused a valid file: {e}"
        assert e.line == expected.line, f"engine says line {e.line}, reference line {expected.line}: {e}"
        assert str(e).startswith(f"{path}:{e.line}: ") and len(str(e)) > len(path) + 10
        return e.line
    assert not isinstance(expected, Refused), f"engine accepted a file the reference refuses at line {expected.line}"
    (n, nf, nl), labels, features = expected
    assert split.X.shape == (n, nf) and split.Y.shape == (n, nl)
    for i in range(n):
        assert sorted(split.Y.indices[split.Y.indptr[i]:split.Y.indptr[i + 1]].tolist()) == sorted(labels[i])
        got = dict(zip(split.X.indices[split.X.indptr[i]:split.X.indptr[i + 1]].tolist(),
                       split.X.data[split.X.indptr[i]:split.X.indptr[i + 1]].tolist()))
        assert got == features[i], i
    return None


# ----------------------------------------------------------------------------- strategies
ids = st.one_of(st.integers(0, 12), st.integers(0, 2**31 + 5), st.sampled_from([2**63 - 1, 2**63, 10**30]))
values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda v: repr(float(v))),
    st.sampled_from(["nan", "inf", "-inf", "1e39", "-1e39", "1e-60", "1e400", "1e-922", "-1e-310", "100e-330", "-1e309", ".5", "5.", "-.5", "+1", "1e", "1e+",
                     "0x1p3", "1_0", "", "-", ".", "1.2.3", "١", "NaN", "infinity"]),
)
separators = st.sampled_from([" ", " ", " ", "\t", "  ", " \t"])


@st.composite
def xc_text(draw) -> bytes:
    nf = draw(st.integers(1, 12))
    nl = draw(st.integers(1, 12))
    n = draw(st.integers(0, 6))
    lines = []
    for _ in range(n):
        labs = draw(st.lists(st.integers(0, nl - 1), max_size=4, unique=True))
        feats = draw(st.lists(st.tuples(st.integers(0, nf - 1), values.filter(lambda v: v and "x" not in v)),
                              max_size=5, unique_by=lambda t: t[0]))
        sep = draw(separators)
        line = ",".join(map(str, labs)) + sep + sep.join(f"{f}:{v}" for f, v in feats)
        lines.append(line)
    header_n = draw(st.one_of(st.just(n), st.integers(0, 8)))  # sometimes the header lies
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = f"{header_n} {nf} {nl}" + eol + eol.join(lines) + draw(st.sampled_from(["", eol, eol * 3]))
    return text.encode()


@st.composite
def damaged(draw) -> bytes:
    data = bytearray(draw(xc_text()))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "junk", "id", "value"]))
        pos = draw(st.integers(0, max(len(data), 1)))
        if kind == "truncate":
            del data[pos:]
        elif kind == "flip" and data:
            data[min(pos, len(data) - 1)] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from([b",", b":", b" ", b"\t", b"\n", b"\r", b"\r\n", b"\x00", b"-", b"+",
                                                  b"e", b".", b"9", b"\n\n", b"\xff\xfe"]))
        elif kind == "delete" and data:
            del data[pos:pos + draw(st.integers(1, 3))]
        elif kind == "junk":
            data[pos:pos] = draw(st.binary(max_size=12))
        elif kind == "id":
            data[pos:pos] = str(draw(ids)).encode()
        else:
            data[pos:pos] = draw(values).encode()
    return bytes(data)


# benches/fuzz_loaders.py raises the count for a long run.
EXAMPLES = int(os.environ.get("SLIDE_FUZZ_EXAMPLES", "1500"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(xc_text())
def test_generated_files_match_the_reference(data):
    check_against_reference(data)


@FUZZ
@given(damaged())
@example(b"")
@example(b"\n")
@example(b"1 1 1")
@example(b"0 1 1\n\n\n")
@example(b"1 2 2\n0 1:1\r\r\n")
@example(b"1 2 2\n\x00")
@example(b"99999999999999999999 1 1\n")
@example(b"9000000000000000000 2000000000 2000000000\n0 1999999999:1\n")
def test_damaged_files_parse_like_the_reference_or_name_the_line(data):
    check_against_reference(data)


def _outcome_whole(data: bytes):
    try:
        return _core.parse_xc(data)
    except _core.ParseError as e:
        return tuple(e.args)


@settings(max_examples=max(EXAMPLES // 5, 50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged(), st.integers(1, 64), st.integers(1, 3))
@example(data=b"0 1 1\n\n,", block_bytes=1, workers=1)  # a block of one blank line, then a point
def test_blocks_parsed_on_several_threads_match_one_parser(tmp_path_factory, data, block_bytes, workers):
    """What conversion and streamed prediction read with: the same arrays, or the same error at
    the same line, as the whole file parsed at once."""
    from slide.datasets.errors import DataFormatError
    from slide.datasets.xc_blocks import parse_blocks

    if data[:2] == b"\x1f\x8b":  # read as gzip by its magic number
        return
    path = tmp_path_factory.mktemp("blocks") / "data.txt"
    path.write_bytes(data)
    expected = _outcome_whole(data)
    try:
        parts = list(parse_blocks(path, block_bytes, workers))
    except DataFormatError as e:
        assert (e.line, str(e).split(": ", 1)[1]) == expected
        return
    assert isinstance(expected, dict), expected
    for key in ("x_indptr", "y_indptr"):
        offsets = [0]
        for part in parts:
            offsets.extend(offsets[-1] + part[key][1:])
        np.testing.assert_array_equal(offsets, expected[key])
    for key in ("x_indices", "x_data", "y_indices"):
        np.testing.assert_array_equal(np.concatenate([p[key] for p in parts]), expected[key])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_binary_junk_is_refused_or_matches_the_reference(data):
    check_against_reference(data)


def test_a_lying_header_allocates_nothing_huge():
    """Two billion labels and features in the header: parsed with small memory, not an OOM."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    split = parse_xc_bytes(b"1 2000000000 2000000000\n1999999999 1999999999:1\n")
    assert split.X.shape == (1, 2_000_000_000) and split.Y.indices.tolist() == [1_999_999_999]
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB
    with pytest.raises(DataFormatError, match="ends after 0"):
        parse_xc_bytes(b"9000000000000000000 5 5\n")


@settings(max_examples=40, deadline=None)
@given(damaged())
def test_files_on_disk_name_their_path(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "data.txt"
    path.write_bytes(data)
    try:
        load_xc(path, cache=False)
    except DataFormatError as e:
        assert str(e).startswith(f"{path}:")


# ----------------------------------------------------------------------------- Text8
def reference_tokenize(data: bytes, min_count: int, max_vocab: int):
    tokens = [t for t in re.split(rb"[ \t\r\n]+", data) if t]
    counts: dict[bytes, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    vocab = sorted((w for w in counts if counts[w] >= min_count), key=lambda w: (-counts[w], w))
    if max_vocab:
        vocab = vocab[:max_vocab]
    index = {w: i for i, w in enumerate(vocab)}
    return vocab, [counts[w] for w in vocab], [index[t] for t in tokens if t in index], len(tokens)


corpus = st.one_of(
    st.binary(max_size=400),
    st.lists(st.sampled_from(["the", "a", "of", "cat", "é", "\x00", "\xff", "x" * 40]), max_size=80).map(
        lambda ws: " ".join(ws).encode("utf-8", "surrogatepass")),
    st.text(alphabet=" \t\r\nabc\x00é", max_size=200).map(lambda s: s.encode()),
)


@settings(max_examples=600, deadline=None)
@given(corpus, st.integers(1, 3), st.integers(0, 5))
def test_text8_tokenizer_matches_the_reference(data, min_count, max_vocab):
    d = _core.tokenize_corpus(data, min_count, max_vocab)
    words, counts, ids, read = reference_tokenize(data, min_count, max_vocab)
    assert list(d["words"]) == words
    assert np.asarray(d["counts"]).tolist() == counts
    assert np.asarray(d["ids"]).tolist() == ids
    assert d["tokens_read"] == read


@settings(max_examples=60, deadline=None)
@given(corpus, st.integers(1, 4))
@example(b"\x00\x00\xfe\xff", 1)  # the UTF-32 big-endian mark, which begins with NULs
@example(b"\xff\xfe\x00\x00a", 1)
def test_text8_loading_gives_samples_or_a_clear_error(tmp_path_factory, data, window):
    from slide.datasets.text8 import load_text8

    path = tmp_path_factory.mktemp("t8") / "corpus.txt"
    path.write_bytes(data)
    try:
        c = load_text8(path, window=window, subsample=0, cache=False)
    except ValueError as e:
        assert str(e).startswith(f"{path}:")
        if data.startswith(b"\x1f\x8b"):  # gzip's magic number: read as a (here broken) gzip stream
            assert "broken gzip stream" in str(e)
        elif data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):  # UTF-16/32 byte-order marks
            assert "byte 0: a UTF-" in str(e) and "byte-order mark" in str(e)
        elif b"\x00" in data:  # text never holds a NUL: the first one is named
            assert f"byte {data.index(bytes(1))}: a NUL byte" in str(e)
        else:
            assert "too few words" in str(e) and len(reference_tokenize(data, 1, 0)[2]) < 2
        return
    split = c.samples(0, c.train_end)
    assert split.X.shape[1] == split.Y.shape[1] == c.vocab_size
    assert (split.X.sum(axis=1) == 1).all()  # one-hot centre words
    assert split.Y.indices.max(initial=0) < c.vocab_size


# ----------------------------------------------------------------------------- the libFuzzer corpus
# Inputs that libFuzzer found to reach new code (benches/fuzz_parsers.py keeps them), replayed
# against the references on every test run, without needing clang.
CORPUS = Path(__file__).resolve().parents[1] / "fuzz_corpus"


def _corpus(name: str) -> list[Path]:
    files = sorted((CORPUS / name).iterdir())
    assert len(files) >= 20, f"the {name} fuzz corpus is missing"
    return files


def test_the_xc_fuzz_corpus_matches_the_reference():
    outcomes = [check_against_reference(p.read_bytes(), p.name) for p in _corpus("xc_parser")]
    assert any(o is None for o in outcomes) and any(o is not None for o in outcomes)


def test_the_text8_fuzz_corpus_matches_the_reference():
    for p in _corpus("text8"):
        data = p.read_bytes()
        if not data:
            continue
        knobs = data[0]  # as cpp/fuzz/text8_fuzz.cpp reads them
        min_count, max_vocab = 1 + (knobs & 3), (knobs >> 2) & 7
        d = _core.tokenize_corpus(data[1:], min_count, max_vocab)
        words, counts, ids, _ = reference_tokenize(data[1:], min_count, max_vocab)
        assert list(d["words"]) == words and np.asarray(d["ids"]).tolist() == ids, p.name
