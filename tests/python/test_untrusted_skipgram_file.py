"""Skip-gram model files from anywhere (issue 28, classes 2 and 4): a malformed header is refused
naming the file and the field; a config that would size the engine's vectors is checked against
the arrays the file holds, and the engine's allocation against a memory estimate, before
anything is allocated; members are read bounded by the file's size."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from slide import memory, skipgram
from slide.cli import main as cli
from slide.skipgram import SkipGram

WORDS = [f"w{i}" for i in range(200)]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    model = SkipGram(WORDS, np.arange(1, 201), dim=10, threads=1, seed=0)
    path = tmp_path_factory.mktemp("sg") / "sg.npz"
    model.save(path)
    return path


@pytest.fixture
def no_big_engine(monkeypatch):
    """The engine's constructor, refusing (as an AssertionError the tests do not expect) any model
    larger than 64 MiB: a file must be refused before the engine allocates for it."""
    real = skipgram.SkipGramEngine

    def guarded(counts, dim, seed):
        assert len(counts) * dim * 8 < 64 << 20, f"allocated {len(counts)} x {dim} vectors from a file's config"
        return real(counts, dim, seed)

    monkeypatch.setattr(skipgram, "SkipGramEngine", guarded)


def _rewrite(src: Path, out: Path, change: Callable[[dict], Any] = lambda h: None,
             arrays: dict[str, np.ndarray] | None = None, raw_header: bytes | None = None) -> Path:
    """A copy of a skip-gram file with its header changed (checksums recomputed for `arrays`)."""
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    header = json.loads(np.load(io.BytesIO(members["header.npy"])).tobytes())
    for name, a in (arrays or {}).items():
        buf = io.BytesIO()
        np.save(buf, a)
        members[name + ".npy"] = buf.getvalue()
        header["checksums"][name] = skipgram._crc32(a)
    change(header)
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(raw_header if raw_header is not None else json.dumps(header).encode(), np.uint8))
    members["header.npy"] = buf.getvalue()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out


def _set(key: str, value: Any) -> Callable[[dict], None]:
    return lambda h: h.update({key: value})


def _config(key: str, value: Any) -> Callable[[dict], None]:
    return lambda h: h["config"].update({key: value})


@pytest.mark.parametrize("change, field", [
    (_set("config", 5), "config"),
    (_set("config", [1, 2]), "config"),
    (_set("config", "dim=10"), "config"),
    (lambda h: h.pop("config"), "config"),
    (_config("dim", "10"), "dim"),
    (_config("seed", "0"), "seed"),
    (_config("dim", None), "dim"),
    (_config("threads", 10**9), "threads"),
    (_config("bogus", 1), "bogus"),
    (_set("passes", "many"), "passes"),
    (_set("passes", -1), "passes"),
    (_set("checksums", [1]), "checksums"),
    (_set("checksums", 5), "checksums"),
])
def test_a_malformed_header_names_the_file_and_the_field(saved, tmp_path, change, field, no_big_engine):
    bad = _rewrite(saved, tmp_path / "bad.npz", change)
    with pytest.raises(ValueError) as e:
        SkipGram.load(bad)
    assert str(bad) in str(e.value) and field in str(e.value), e.value


@pytest.mark.parametrize("raw", [b"[1, 2]", b"5", b"null", b"\"slide-skipgram\"", b"{", b"\xff\xfe", b"[" * 100_000])
def test_a_header_that_is_not_a_json_object_is_refused(saved, tmp_path, raw):
    bad = _rewrite(saved, tmp_path / "bad.npz", raw_header=raw)
    with pytest.raises(ValueError, match="bad.npz"):
        SkipGram.load(bad)


@pytest.mark.parametrize("change", [_set("config", 5), _config("dim", "x"), _set("passes", [])])
def test_slide_export_names_a_malformed_skipgram_header_without_a_traceback(saved, tmp_path, capsys, change):
    bad = _rewrite(saved, tmp_path / "bad.npz", change)
    assert cli(["export", str(bad), "--out", str(tmp_path / "v.txt")]) == 2
    err = capsys.readouterr().err
    assert "slide: error:" in err and str(bad) in err and "Traceback" not in err
    assert not (tmp_path / "v.txt").exists()


@pytest.mark.parametrize("dim", [10**6, 10**5, 2**31 - 1, 2**40])
def test_a_config_dim_that_disagrees_with_the_vectors_is_refused_before_the_engine_allocates(
        saved, tmp_path, dim, no_big_engine):
    bad = _rewrite(saved, tmp_path / "dim.npz", _config("dim", dim))
    assert bad.stat().st_size < 64 << 10
    with pytest.raises(ValueError, match=r"word_vectors|dim") as e:
        SkipGram.load(bad)
    assert str(bad) in str(e.value)


@pytest.mark.parametrize("name, array, needle", [
    ("counts", np.arange(1, 201, dtype=np.float64), "counts"),
    ("counts", np.arange(1, 201).reshape(20, 10), "counts"),
    ("counts", np.arange(1, 101), "counts"),
    ("word_vectors", np.zeros((200, 10), np.float64), "word_vectors"),
    ("word_vectors", np.zeros((2000,), np.float32), "word_vectors"),
    ("context_vectors", np.zeros((200, 11), np.float32), "context_vectors"),
    ("vocabulary.utf8", np.zeros(5, np.int32), "vocabulary"),
])
def test_arrays_of_the_wrong_type_or_shape_are_named(saved, tmp_path, name, array, needle, no_big_engine):
    bad = _rewrite(saved, tmp_path / "arrays.npz", arrays={name: array})
    with pytest.raises(ValueError, match=needle) as e:
        SkipGram.load(bad)
    assert str(bad) in str(e.value)


def test_a_deflated_or_lying_member_is_refused_before_it_is_read(saved, tmp_path):
    with zipfile.ZipFile(saved) as z:
        members = {n: z.read(n) for n in z.namelist()}
    deflated = tmp_path / "deflated.npz"
    with zipfile.ZipFile(deflated, "w") as z:
        for name, data in members.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if name == "counts.npy" else zipfile.ZIP_STORED)
    with pytest.raises(ValueError, match="compressed"):
        SkipGram.load(deflated)
    for member in ("header.npy", "word_vectors.npy"):
        lying = tmp_path / f"lying-{member}"
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (10**12, 10)})
        with zipfile.ZipFile(lying, "w") as z:
            for name, data in members.items():
                z.writestr(name, buf.getvalue() + bytes(64) if name == member else data)
        with pytest.raises(ValueError, match=member[:-4]) as e:
            SkipGram.load(lying)
        assert str(lying) in str(e.value)


# ----------------------------------------------------------------------------- memory estimate
def test_skipgram_has_a_memory_estimate_checked_before_the_engine_allocates(monkeypatch, no_big_engine):
    monkeypatch.setattr(memory, "available_bytes", lambda: (32 << 20, "a test's limit"))
    with pytest.raises(MemoryError, match=r"skip-gram model .* needs about .* GiB .*a test's limit"):
        SkipGram(WORDS, np.ones(200, np.int64), dim=100_000, threads=1)
    with pytest.raises(MemoryError, match="dim"):
        SkipGram(WORDS, np.ones(200, np.int64), dim=50_000, threads=1)
    SkipGram(WORDS, np.ones(200, np.int64), dim=8, threads=1)  # a small model still fits


def test_the_estimate_counts_both_vector_tables(monkeypatch):
    est = memory.skipgram_estimate(1000, 50, threads=4)
    assert est["parameters"] == 2 * 1000 * 50 * 4
    assert est["total"] >= est["parameters"] + est["scratch"] and est["lsh"] == 0


def test_slide_memory_check_off_turns_the_refusal_into_a_warning(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: (1 << 10, "a test's limit"))
    monkeypatch.setenv("SLIDE_MEMORY_CHECK", "0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SkipGram(WORDS, np.ones(200, np.int64), dim=4, threads=1)
    assert any("skip-gram" in str(w.message) for w in caught)


def test_a_good_file_still_loads_identically(saved):
    model = SkipGram.load(saved)
    assert model.dim == 10 and model.vocabulary == WORDS and model.passes == 0
