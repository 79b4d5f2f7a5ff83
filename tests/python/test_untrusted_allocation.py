"""Allocation bombs (issue 28, class 2): no allocation is sized by a number read from a file until
that number is checked against the file's size (or, for a model built from a config, against the
memory estimate). Each hostile file here passes every checksum, so only a size check can catch it;
each test measures the peak of Python and NumPy allocations with tracemalloc and requires the
refusal to come before the bomb goes off."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

import slide
from slide import memory
from slide.cli import main as cli
from slide.datasets.xc_files import load_xc
from slide.model_file import ModelFileError, read_arrays, read_header
from slide.word_vectors import read_word2vec, write_word2vec

BOMB = 256 << 20  # what a bomb inflates to: far above the peak any refusal may reach
PEAK = 48 << 20  # the most a refusal may allocate on the way


def _peak(action: Callable[[], object]) -> tuple[int, BaseException | None]:
    """(peak bytes traced while running `action`, the exception it raised, if any)."""
    tracemalloc.start()
    try:
        action()
        error = None
    except BaseException as e:  # noqa: BLE001 - the test inspects it
        error = e
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, error


def _assert_refused(action: Callable[[], object], kind: type, *needles: str) -> BaseException:
    peak, error = _peak(action)
    assert peak < PEAK, f"allocated {peak / 2**20:.0f} MiB before refusing ({error!r})"
    assert isinstance(error, kind), repr(error)
    for needle in needles:
        assert needle in str(error), f"{needle!r} not in {error}"
    return error


# ----------------------------------------------------------------------------- model files
def _npy_header(shape: tuple, dtype: str) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _zeros(nbytes: int) -> Iterator[bytes]:
    block = bytes(1 << 20)
    for start in range(0, nbytes, len(block)):
        yield block[:min(len(block), nbytes - start)]


def _crc_of_zeros(nbytes: int) -> str:
    crc = 0
    for chunk in _zeros(nbytes):
        crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def _forge(src: Path, out: Path, member: str, header: bytes, data: Iterator[bytes], checksum: str,
           *, deflate: bool = True, header_member: str = "__slide_header__") -> None:
    """Copy a model file with `member` replaced (deflated, unless not `deflate`) and the JSON
    header's checksum for it recomputed, so the file passes every CRC."""
    with zipfile.ZipFile(src) as z:
        meta = json.loads(np.load(io.BytesIO(z.read(header_member + ".npy"))).tobytes())
    meta["checksums"][member[:-4]] = checksum
    raw = io.BytesIO()
    np.save(raw, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(out, "w") as dst:
        for name in z.namelist():
            if name == member:
                info = zipfile.ZipInfo(name)
                info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
                info._compresslevel = 1  # noqa: SLF001 - fast; zeros deflate ~1000:1 at any level
                with dst.open(info, "w", force_zip64=True) as f:
                    f.write(header)
                    for chunk in data:
                        f.write(chunk)
            else:
                dst.writestr(name, raw.getvalue() if name == header_member + ".npy" else z.read(name))


class _Unpickles:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def __reduce__(self):
        from slide.network import _network_from_bytes

        return _network_from_bytes, (slide.Network, self.data)


WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A small network with a vocabulary and a neighbour memory: every whole-read member."""
    rng = np.random.default_rng(0)
    net = slide.Network(40, 30, hidden=(8,), lsh=slide.LSHConfig(k=2, l=3), threads=1, seed=0)
    net.vocabulary = WORDS
    X = (rng.random((20, 40)) < 0.2).astype(np.float32) + np.eye(20, 40, dtype=np.float32)
    net.remember(X, [[i % 30] for i in range(20)])
    path = tmp_path_factory.mktemp("model") / "m.npz"
    net.save(path)
    return path


@pytest.mark.parametrize("member, dtype, itemsize", [
    ("vocabulary.utf8.npy", "|u1", 1),
    ("neighbours.points.indices.npy", "<i4", 4),
    ("neighbours.points.data.npy", "<f4", 4),
    ("neighbours.labels.indptr.npy", "<i8", 8),
])
def test_a_deflated_member_that_inflates_to_hundreds_of_megabytes_is_refused_before_inflating(
        model, tmp_path, member, dtype, itemsize):
    bad = tmp_path / "bomb.npz"
    _forge(model, bad, member, _npy_header((BOMB // itemsize,), dtype), _zeros(BOMB), _crc_of_zeros(BOMB))
    assert bad.stat().st_size < 2 << 20  # a small download
    _assert_refused(lambda: slide.Network.load(bad), ModelFileError, str(bad), member[:-4])
    _assert_refused(lambda: read_arrays(bad), ModelFileError, str(bad), member[:-4])
    evil = pickle.dumps(_Unpickles(bad.read_bytes()))  # what unpickling a Network runs, with these bytes
    _assert_refused(lambda: pickle.loads(evil), ModelFileError, member[:-4])


def test_every_compressed_member_is_refused_as_not_written_by_slide(model, tmp_path):
    """slide writes members stored (np.savez): a deflated one, even a small honest one, is refused."""
    with zipfile.ZipFile(model) as z:
        names = [n for n in z.namelist() if n != "__slide_header__.npy"]
        for name in (names[0], "layers.0.bias.npy", "vocabulary.utf8.npy"):
            bad = tmp_path / f"deflated-{name}.npz"
            with zipfile.ZipFile(bad, "w") as dst:
                for other in z.namelist():
                    dst.writestr(other, z.read(other),
                                 compress_type=zipfile.ZIP_DEFLATED if other == name else zipfile.ZIP_STORED)
            with pytest.raises(ModelFileError, match="compressed"):
                slide.Network.load(bad)
            with pytest.raises(ModelFileError, match="compressed"):
                read_header(bad)


@pytest.mark.parametrize("shape", [(10**12,), (BOMB // 4,), (1 << 40, 1 << 30)])
def test_a_stored_member_whose_header_promises_more_than_the_file_holds_is_refused_unallocated(
        model, tmp_path, shape):
    """The whole-file reader (checkpoint shards, reshard) sizes no array from an .npy header."""
    bad = tmp_path / "lies.npz"
    _forge(model, bad, "layers.0.bias.npy", _npy_header(shape, "<f4"), iter([bytes(64)]), "00000000",
           deflate=False)
    _assert_refused(lambda: read_arrays(bad), ModelFileError, str(bad), "layers.0.bias")
    bad2 = tmp_path / "lies-vocabulary.npz"
    _forge(model, bad2, "vocabulary.utf8.npy", _npy_header(shape[:1], "|u1"), iter([bytes(64)]), "00000000",
           deflate=False)
    _assert_refused(lambda: slide.Network.load(bad2), ModelFileError, str(bad2), "vocabulary.utf8")


class _SmallOnly(slide.Network):
    """A Network that refuses (with an AssertionError the tests do not expect) to be built with
    more than 10^6 weights: a file must be refused before its config is built."""

    @classmethod
    def from_config(cls, config, **overrides):
        dims = [config["input_dim"], *config["hidden"], config["output_dim"]]
        assert sum(a * b for a, b in zip(dims, dims[1:])) < 10**6, f"built {dims} from a file's header"
        return super().from_config(config, **overrides)


@pytest.mark.parametrize("change", [
    {"output_dim": 10**7}, {"input_dim": 10**7}, {"hidden": [10**6]},
    {"hidden": [8, 10**6], "hidden_lsh": [None, None]},
])
def test_a_config_larger_than_the_files_weights_is_refused_before_the_network_is_built(model, tmp_path, change):
    with zipfile.ZipFile(model) as z:
        meta = json.loads(np.load(io.BytesIO(z.read("__slide_header__.npy"))).tobytes())
        members = {n: z.read(n) for n in z.namelist()}
    meta["config"].update(change)
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    members["__slide_header__.npy"] = buf.getvalue()
    bad = tmp_path / "big-config.npz"
    with zipfile.ZipFile(bad, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    with pytest.raises(ModelFileError, match="bytes") as e:
        _SmallOnly.load(bad)
    assert str(bad) in str(e.value)


# ----------------------------------------------------------------------------- XC headers
_LYING = {
    "labels": b"5 10 2147483647\n1 0:1\n2 1:1\n3 2:1\n4 3:1\n5 4:1\n",
    "both": b"5 2147483647 2147483647\n1 0:1\n2 1:1\n3 2:1\n4 3:1\n5 4:1\n",
    "far-id": b"2 2147483647 2147483647\n2147483646 2147483646:1\n0 0:1\n",
}


@pytest.mark.parametrize("case", sorted(_LYING))
def test_an_xc_headers_counts_size_no_allocation_in_data_info(tmp_path, case, capsys):
    path = tmp_path / f"{case}.txt"
    path.write_bytes(_LYING[case])
    for action in ("info", "check"):
        peak, error = _peak(lambda: cli(["data", action, str(path)]))
        assert error is None and peak < PEAK, (action, peak, error)
        assert "2,147,483,647 labels" in capsys.readouterr().out
    split = load_xc(path, cache=False)
    from slide.cli.data import describe

    peak, error = _peak(lambda: describe(split))
    assert error is None and peak < PEAK, (peak, error)


def test_describe_reports_the_same_statistics_as_before(tmp_path):
    from slide.cli.data import describe
    from slide.datasets import make_train_test

    train, _ = make_train_test(300, 10, 50, 80, seed=1, avg_nnz=5, avg_labels=3)
    freq = np.sort(np.bincount(train.Y.indices, minlength=train.Y.shape[1]))[::-1]
    head = freq[: max(1, len(freq) // 100)].sum() / max(freq.sum(), 1)
    text = describe(train)
    assert f"top 1% of labels hold {head:.1%}" in text
    assert f"{(freq > 0).sum():,} labels used" in text


# ----------------------------------------------------------------------------- word2vec
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("header", [b"1000000000 1000000", b"1000000 300", b"3 100000000", b"20000000 1"])
def test_a_word2vec_header_is_checked_against_the_files_size_before_allocating(tmp_path, binary, header):
    path = tmp_path / "v.bin"
    path.write_bytes(header + b"\na " + np.ones(1, "<f4").tobytes() + b"\n" if binary else header + b"\na 1\n")
    _assert_refused(lambda: read_word2vec(path, binary=binary), ValueError, str(path))


def test_a_word2vec_header_that_fits_the_file_still_reads(tmp_path):
    for binary in (False, True):
        path = tmp_path / f"ok-{binary}"
        write_word2vec(path, ["a", "b"], np.arange(6, dtype=np.float32).reshape(2, 3), binary=binary)
        words, vectors = read_word2vec(path, binary=binary)
        assert words == ["a", "b"] and vectors.tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("dim", [1, 3, 50])
@pytest.mark.parametrize("newline", [True, False])
def test_a_text_word2vec_file_read_as_binary_is_refused_by_name(tmp_path, dim, newline):
    path = tmp_path / "v.txt"
    vectors = np.random.default_rng(dim).standard_normal((4, dim)).astype(np.float32)
    write_word2vec(path, ["the", "of", "and", "one"], vectors)
    if not newline:
        path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with pytest.raises(ValueError, match=r"text word2vec file.*binary=False") as e:
        read_word2vec(path, binary=True)
    assert str(path) in str(e.value)


@pytest.mark.parametrize("dim", [1, 3, 50])
def test_a_binary_word2vec_file_read_as_text_is_refused_by_name(tmp_path, dim):
    path = tmp_path / "v.bin"
    vectors = np.random.default_rng(dim).standard_normal((4, dim)).astype(np.float32)
    write_word2vec(path, ["the", "of", "and", "one"], vectors, binary=True)
    with pytest.raises(ValueError, match=r"line 2: .*binary word2vec file.*binary=True") as e:
        read_word2vec(path)
    assert str(path) in str(e.value)


def test_gensim_style_binary_files_without_newlines_still_read(tmp_path):
    path = tmp_path / "g.bin"
    rows = np.random.default_rng(5).standard_normal((3, 7)).astype(np.float32)
    path.write_bytes(b"3 7\n" + b"".join(w.encode() + b" " + r.tobytes() for w, r in zip("xyz", rows)))
    words, vectors = read_word2vec(path, binary=True)
    assert words == ["x", "y", "z"] and np.array_equal(vectors, rows)


# ----------------------------------------------------------------------------- gzip bombs
def _gzip_bomb(path: Path, first: bytes, nbytes: int = BOMB) -> Path:
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(first)
        for chunk in _zeros(nbytes):
            f.write(chunk.replace(b"\0", b" "))
    return path


@pytest.fixture
def little_memory(monkeypatch):
    """A machine with 32 MiB to spare: the bound the decompressed text is checked against."""
    monkeypatch.setattr(memory, "available_bytes", lambda: (32 << 20, "a test's limit"))


@pytest.mark.parametrize("kind", ["xc", "text8", "arff"])
def test_a_gzip_bomb_is_refused_by_name_before_it_fills_memory(tmp_path, little_memory, kind):
    first = {"xc": b"1 2 2\n0 0:1\n", "text8": b"a b c ", "arff": b"@relation r\n"}[kind]
    path = _gzip_bomb(tmp_path / f"{kind}.txt", first, 96 << 20)  # six times the bound
    assert path.stat().st_size < 2 << 20
    load = {"xc": lambda: load_xc(path, cache=False),
            "text8": lambda: slide.datasets.text8.load_text8(path, cache=False),
            "arff": lambda: slide.datasets.arff.load_arff(path, labels=1)}[kind]
    _assert_refused(load, MemoryError, str(path), "decompress")


def test_a_gzip_file_within_the_bound_still_loads(tmp_path, little_memory):
    path = tmp_path / "ok.txt"
    with gzip.open(path, "wb") as f:
        f.write(b"2 3 2\n0 0:1\n1 1:1 2:0.5\n")
    assert load_xc(path, cache=False).X.shape == (2, 3)


def test_the_cli_names_a_gzip_bomb_without_a_traceback(tmp_path):
    path = _gzip_bomb(tmp_path / "bomb.txt", b"1 2 2\n0 0:1\n", 64 << 20)
    code = ("import resource, sys; from slide import memory; "
            "memory.available_bytes = lambda: (16 << 20, 'a test limit'); "
            "from slide.cli import main; sys.exit(main(sys.argv[1:]))")
    # cwd away from the source tree, whose slide/ has no compiled extension and would shadow the installed one
    run = subprocess.run([sys.executable, "-c", code, "data", "check", str(path)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "slide: error:" in run.stderr and str(path) in run.stderr and "Traceback" not in run.stderr
    assert "decompress" in run.stderr
