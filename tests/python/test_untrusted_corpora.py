"""Issue 28, corpora and caches from anywhere (classes 10 and 6): a corpus that is not text, a
learning rate that makes skip-gram diverge, word counts whose sum overflows, a source changed with
its size and modification time kept, a damaged text8 cache, and one very long line."""

import json
import logging
import os
import shutil

import numpy as np
import pytest

from slide import _core
from slide.cli import main as cli
from slide.datasets import text8, xc_blocks
from slide.datasets.cache import cache_path
from slide.datasets.text8 import Text8Corpus, load_text8
from slide.datasets.xc_files import load_xc, stream_shards
from slide.network import TrainingDiverged
from slide.skipgram import SkipGram

WORDS = [f"w{i}" for i in range(40)]


def _corpus_bytes(seed: int = 0, n: int = 3000) -> bytes:
    rng = np.random.default_rng(seed)
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n)).encode() + b"\n"


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "text8").mkdir()
    (tmp_path / "text8" / "text8").write_bytes(_corpus_bytes())
    return tmp_path


def _train_text8(data_dir, out, *sets):
    args = ["train", "--dataset", "text8", "--data-dir", str(data_dir), "--quiet", "--threads", "1", "--epochs", "1",
            "--set", "skipgram.dim=8", "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    return cli(args)


# ------------------------------------------------------------------ class 10: skip-gram divergence
@pytest.mark.parametrize("rate", ["1e30", "1e12"])
def test_a_diverging_skipgram_run_stops_with_exit_3_and_saves_no_nan_model(data_dir, tmp_path, capsys, rate):
    code = _train_text8(data_dir, tmp_path / "run", f"skipgram.learning_rate={rate}")
    err = capsys.readouterr().err
    assert code == 3, err
    assert "diverged" in err and "skipgram.learning_rate" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "model.npz").exists()


def test_a_sane_rate_still_trains(data_dir, tmp_path, capsys):
    assert _train_text8(data_dir, tmp_path / "run") == 0, capsys.readouterr().err
    assert (tmp_path / "run" / "model.npz").exists()


@pytest.mark.parametrize("threads", [1, 2])
def test_fit_raises_training_diverged_on_non_finite_vectors(threads):
    model = SkipGram(WORDS[:3], np.array([10, 10, 10]), dim=8, threads=threads, learning_rate=1e30)
    with pytest.raises(TrainingDiverged, match="non-finite|NaN"):
        model.fit(np.tile(np.arange(3, dtype=np.int32), 1000), 2, progress=False)


def test_fit_notices_an_infinite_vector_even_when_the_loss_stays_finite():
    model = SkipGram(WORDS[:3], np.array([10, 10, 10]), dim=4, threads=1)
    model._core.context_vectors[2, 0] = np.inf  # a word the corpus below never reaches as centre
    with pytest.raises(TrainingDiverged):
        model.fit(np.array([0, 1, 0, 1] * 10, np.int32), 1, progress=False)


# ------------------------------------------------------------------ class 10: corpora that are not text
@pytest.mark.parametrize("encode, offset", [
    (lambda t: t.decode().encode("utf-16"), 0),        # with its BOM, little-endian on this machine
    (lambda t: t.decode().encode("utf-16-be"), 0),     # no BOM: a NUL in the first two bytes
    (lambda t: t.decode().encode("utf-16-le"), 1),
    (lambda t: t.decode().encode("utf-32"), 0),
    (lambda t: t[:100] + b"\x00" + t[100:], 100),      # one NUL byte in UTF-8 text
])
def test_a_corpus_that_is_not_byte_text_is_refused_naming_the_file_and_byte(tmp_path, encode, offset):
    path = tmp_path / "corpus.txt"
    path.write_bytes(encode(_corpus_bytes()))
    with pytest.raises(ValueError) as e:
        load_text8(path, cache=False)
    assert str(path) in str(e.value) and f"byte {offset}" in str(e.value)


def test_a_utf16_corpus_is_refused_by_slide_train(data_dir, tmp_path, capsys):
    corpus = data_dir / "text8" / "text8"
    corpus.write_bytes(corpus.read_bytes().decode().encode("utf-16"))
    assert _train_text8(data_dir, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert str(corpus) in err and "UTF-16" in err and "Traceback" not in err


def test_a_gzipped_utf16_corpus_is_refused(tmp_path):
    import gzip

    path = tmp_path / "corpus.gz"
    path.write_bytes(gzip.compress(_corpus_bytes().decode().encode("utf-16")))
    with pytest.raises(ValueError, match="UTF-16"):
        load_text8(path, cache=False)


def test_a_utf16_corpus_in_an_old_cache_is_refused_too(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(_corpus_bytes())
    load_text8(path)
    cache = cache_path(path, "text8-1-0", None)
    with np.load(cache) as z:
        arrays = {k: z[k] for k in z.files}
    words = arrays["words"].tolist()
    words[0] = b"w\x000"
    arrays["words"] = np.array(words, dtype=bytes)
    np.savez(cache, **arrays)
    corpus = load_text8(path)
    assert all("\x00" not in w for w in corpus.words)


# ------------------------------------------------------------------ class 10: counts that overflow
@pytest.mark.parametrize("counts", [
    [2**62, 2**62, 2**62, 2**62],           # wraps to exactly 0
    [2**63 - 1, 2**63 - 1, 2, 1],           # wraps to a small positive total
    [2**63 - 1, 1, 1, 1],                   # wraps negative
])
def test_counts_whose_sum_overflows_are_refused(counts):
    with pytest.raises(ValueError, match="overflow|2\\^63|too large"):
        model = SkipGram(WORDS[:4], np.array(counts, np.int64), dim=4, threads=1)
        model.fit(np.tile(np.arange(4, dtype=np.int32), 100), 1, progress=False)


def test_corpus_samples_refuse_counts_whose_sum_overflows():
    ids = np.tile(np.arange(4, dtype=np.int32), 100)
    with pytest.raises(ValueError, match="overflow|2\\^63|too large"):
        _core.corpus_samples(ids, np.array([2**62] * 4, np.int64), 0, 100, 2, 1e-4, 0)


def test_a_skipgram_file_with_overflowing_counts_is_refused_naming_it(tmp_path):
    from slide.skipgram import _crc32

    path = tmp_path / "sg.npz"
    SkipGram(WORDS[:4], np.array([5, 4, 3, 2]), dim=4, threads=1).save(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["counts"] = np.array([2**62] * 4, np.int64)
    header = json.loads(arrays["header"].tobytes())
    header["checksums"]["counts"] = _crc32(arrays["counts"])
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=str(path)):
        SkipGram.load(path)


# ------------------------------------------------------------------ class 10: stale caches
def _same_size_edit(path, keep_mtime_ns, old_ctime_ns=None):
    """Change a byte in the middle without changing the size, then put the modification time back
    (as `touch -r` does); until the change time moves on, touch again (its clock is coarse)."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    while data[middle] in b" \n":
        middle += 1
    data[middle] = ord("7") if data[middle] != ord("7") else ord("8")
    path.write_bytes(bytes(data))
    os.utime(path, ns=(keep_mtime_ns, keep_mtime_ns))
    for _ in range(200):
        if old_ctime_ns is None or os.stat(path).st_ctime_ns != old_ctime_ns:
            return
        import time

        time.sleep(0.01)
        os.utime(path, ns=(keep_mtime_ns, keep_mtime_ns))


def test_a_text8_cache_is_not_served_for_a_file_changed_with_its_size_and_mtime_kept(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(_corpus_bytes())
    before = load_text8(path)
    st = os.stat(path)
    _same_size_edit(path, st.st_mtime_ns)
    after = load_text8(path)
    fresh = load_text8(path, cache=False)
    assert not np.array_equal(before.ids, fresh.ids) or before.words != fresh.words
    assert after.words == fresh.words and np.array_equal(after.ids, fresh.ids)


def _xc_text(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    lines = [f"{rng.integers(0, 9)} " + " ".join(f"{j}:{rng.integers(1, 9)}" for j in sorted(rng.choice(50, 5, False)))
             for _ in range(200)]
    return ("200 50 10\n" + "\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("reader", [load_xc, lambda p: stream_shards(p).load()])
def test_a_shard_cache_is_not_served_for_a_file_changed_with_its_size_and_mtime_kept(tmp_path, reader):
    path = tmp_path / "train.txt"
    path.write_bytes(_xc_text(0))
    reader(path)
    st = os.stat(path)
    _same_size_edit(path, st.st_mtime_ns)
    got, fresh = reader(path), load_xc(path, cache=False)
    assert (got.X != fresh.X).nnz == 0 and (got.Y != fresh.Y).nnz == 0


def test_a_same_size_copy_with_the_old_mtime_is_not_served_from_the_cache(tmp_path):
    """`cp -p other train.txt` where other has the same size and modification time."""
    path, other = tmp_path / "train.txt", tmp_path / "other.txt"
    path.write_bytes(_xc_text(0))
    text = bytearray(_xc_text(0))
    text[-2] = ord("7") if text[-2] != ord("7") else ord("6")  # the last feature's value
    other.write_bytes(bytes(text))
    st = os.stat(path)
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    load_xc(path)
    shutil.copy2(other, path)
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_size == st.st_size
    got, fresh = load_xc(path), load_xc(path, cache=False)
    assert (got.X != fresh.X).nnz == 0 and (got.Y != fresh.Y).nnz == 0


def test_a_change_beyond_the_sampled_megabytes_is_caught_by_the_change_time(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(_corpus_bytes(n=1_200_000))  # about 4.4 MB: its middle is not in the hashed sample
    assert path.stat().st_size > 3 << 20
    load_text8(path)
    st = os.stat(path)
    _same_size_edit(path, st.st_mtime_ns, st.st_ctime_ns)
    after, fresh = load_text8(path), load_text8(path, cache=False)
    assert after.words == fresh.words and np.array_equal(after.ids, fresh.ids)


def test_an_unchanged_source_is_still_served_from_its_cache(tmp_path, monkeypatch):
    path = tmp_path / "corpus.txt"
    path.write_bytes(_corpus_bytes())
    load_text8(path)
    monkeypatch.setattr(text8, "tokenize_corpus", lambda *a: pytest.fail("parsed again"))
    load_text8(path)


# ------------------------------------------------------------------ class 11: a damaged text8 cache
def _damage(arrays: dict, how: str) -> dict:
    if how == "ids out of range":
        arrays["ids"] = arrays["ids"].copy()
        arrays["ids"][5] = 10**6
    elif how == "negative id":
        arrays["ids"] = arrays["ids"].copy()
        arrays["ids"][0] = -1
    elif how == "no ids":
        del arrays["ids"]
    elif how == "counts too short":
        arrays["counts"] = arrays["counts"][:-1]
    elif how == "counts disagree":
        arrays["counts"] = arrays["counts"] * 3
    elif how == "float ids":
        arrays["ids"] = arrays["ids"].astype(np.float64)
    elif how == "2-D ids":
        arrays["ids"] = arrays["ids"][:len(arrays["ids"]) // 2 * 2].reshape(2, -1)
    elif how == "duplicate words":
        words = arrays["words"].tolist()
        words[1] = words[0]
        arrays["words"] = np.array(words, dtype=bytes)
    return arrays


@pytest.mark.parametrize("how", ["ids out of range", "negative id", "no ids", "counts too short", "counts disagree",
                                 "float ids", "2-D ids", "duplicate words", "not a zip", "bad header"])
def test_a_damaged_text8_cache_is_named_and_parsed_again(tmp_path, caplog, how):
    path = tmp_path / "corpus.txt"
    path.write_bytes(_corpus_bytes())
    fresh = load_text8(path)
    cache = cache_path(path, "text8-1-0", None)
    if how == "not a zip":
        cache.write_bytes(b"garbage" * 10)
    else:
        with np.load(cache) as z:
            arrays = {k: z[k] for k in z.files}
        if how == "bad header":
            arrays["__header__"] = np.frombuffer(b"[1, 2", np.uint8)
        else:
            arrays = _damage(arrays, how)
        np.savez(cache, **arrays)
    with caplog.at_level(logging.WARNING, logger="slide"):
        got = load_text8(path)
    assert got.words == fresh.words and np.array_equal(got.ids, fresh.ids)
    assert np.array_equal(got.counts, fresh.counts)
    assert any(str(cache) in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert load_text8(path).words == fresh.words  # and the cache was written again


def test_a_cache_member_that_inflates_beyond_the_file_is_not_read(tmp_path, caplog):
    path = tmp_path / "corpus.txt"
    path.write_bytes(_corpus_bytes())
    fresh = load_text8(path)
    cache = cache_path(path, "text8-1-0", None)
    with np.load(cache) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["ids"] = np.zeros(50_000_000, np.int32)  # 200 MB of zeros deflates to about 200 KB
    np.savez_compressed(cache, **arrays)
    assert cache.stat().st_size < 2_000_000
    with caplog.at_level(logging.WARNING, logger="slide"):
        got = load_text8(path)
    assert np.array_equal(got.ids, fresh.ids)
    assert any(str(cache) in r.getMessage() for r in caplog.records)


def test_a_hand_built_corpus_with_out_of_range_ids_is_refused():
    corpus = Text8Corpus(["a", "b"], np.array([1, 1]), np.array([0, 1, 7], np.int32), 2)
    with pytest.raises(ValueError):
        corpus.samples(0, 3)


# ------------------------------------------------------------------ class 6: a very long line
class _CountingFile:
    def __init__(self, f):
        self.f, self.reads, self.requested = f, 0, 0

    def readinto(self, b):
        self.reads += 1
        self.requested += len(b)
        return self.f.readinto(b)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def test_a_long_line_is_read_in_a_number_of_steps_logarithmic_in_its_length(tmp_path, monkeypatch):
    """The reader used to copy the line read so far once per block (quadratic in its length); now
    the read size doubles while no line break comes, so the copying adds up to a few times the
    line. Measured by reads, not time."""
    n = 2_000_000  # features on the one line: about 20 MB
    path = tmp_path / "long.txt"
    with open(path, "w") as f:
        f.write(f"2 {n} 3\n0 ")
        f.write(" ".join(f"{j}:1" for j in range(n)))
        f.write("\n1 0:1\n")
    size = path.stat().st_size
    block = 64 << 10
    opened = []
    real_open = xc_blocks._open
    monkeypatch.setattr(xc_blocks, "_open", lambda p: opened.append(_CountingFile(real_open(p))) or opened[-1])
    pieces = list(xc_blocks.line_blocks(path, block))
    assert b"".join(bytes(p) for p, _ in pieces) == path.read_bytes()
    reads, requested = opened[0].reads, opened[0].requested
    steps = int(np.ceil(np.log2(size / block)))
    assert reads <= 2 * steps + 4, (reads, steps)  # the quadratic reader made size / block = 320 reads
    assert requested <= 3 * size + 2 * block
    d = list(xc_blocks.parse_blocks(path, block))
    assert sum(len(p["x_indptr"]) - 1 for p in d) == 2 and sum(len(p["x_indices"]) for p in d) == n + 1


def test_long_lines_among_short_ones_keep_their_line_numbers(tmp_path):
    path = tmp_path / "mixed.txt"
    lines = ["0 0:1", "1 " + " ".join(f"{j}:1" for j in range(30_000)), "2 1:1", "0 " + "x" * 200_000]
    path.write_text("4 30000 3\n" + "\n".join(lines) + "\n")
    from slide.datasets.errors import DataFormatError

    with pytest.raises(DataFormatError) as e:
        list(xc_blocks.parse_blocks(path, 4096))
    assert e.value.line == 5
