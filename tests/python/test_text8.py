"""Text8 sample generation on a small generated corpus."""

import numpy as np
import pytest

from slide import _core
from slide.datasets.text8 import load_text8


@pytest.fixture()
def corpus_file(tmp_path):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)]
    ids = np.minimum(rng.zipf(1.5, 20_000), 200) - 1
    path = tmp_path / "text8"
    path.write_text(" ".join(words[i] for i in ids) + " rare1 rare2\n")
    return path, ids


def test_vocabulary_counts_and_order(corpus_file):
    path, ids = corpus_file
    c = load_text8(path, min_count=1, subsample=0, cache=False)
    counts = dict(zip(c.words, c.counts))
    assert counts["w0"] == (ids == 0).sum() and counts["rare1"] == 1
    assert list(c.counts) == sorted(c.counts, reverse=True)
    assert len(c.ids) == 20_002
    capped = load_text8(path, min_count=2, cache=False)
    assert "rare1" not in capped.words and min(capped.counts) >= 2
    assert len(capped.ids) == sum(n for n in counts.values() if n >= 2)
    top = load_text8(path, max_vocab=10, cache=False)
    assert top.vocab_size == 10 and top.words[0] == "w0"


def test_windows_hold_exactly_the_neighbouring_words(corpus_file):
    path, _ = corpus_file
    c = load_text8(path, window=3, subsample=0, cache=False, test_fraction=0.1)
    s = c.samples(0, 2000, seed=5)
    d = _core.corpus_samples(c.ids, c.counts, 0, 2000, 3, 0.0, 5)
    positions = d["positions"]
    assert len(s) == len(positions) > 1900  # only samples without any context are skipped
    for row in range(0, len(positions), 97):
        p = positions[row]
        assert s.X[row].indices.tolist() == [c.ids[p]]
        context = set(s.Y[row].indices.tolist())
        full = {int(c.ids[j]) for j in range(max(0, p - 3), min(len(c.ids), p + 4)) if j != p}
        near = {int(c.ids[j]) for j in (p - 1, p + 1) if 0 <= j < len(c.ids)}
        assert near <= context <= full, (p, context, full)
    sizes = s.Y.getnnz(axis=1)
    assert 1.5 < sizes.mean() < 6  # reduced windows of 1..3 on each side, duplicates merged
    np.testing.assert_array_equal(c.samples(0, 2000, seed=5).Y.indices, s.Y.indices)
    assert not np.array_equal(c.samples(0, 2000, seed=6).Y.indptr, s.Y.indptr)


def test_subsampling_rate_follows_word2vec(corpus_file):
    path, _ = corpus_file
    c = load_text8(path, subsample=1e-3, cache=False, test_fraction=0.0)
    d = _core.corpus_samples(c.ids, c.counts, 0, len(c.ids), 2, 1e-3, 1)
    kept_centres = np.bincount(c.ids[d["positions"]], minlength=c.vocab_size)
    total = c.counts.sum()
    for w in (0, 1, 5):
        expected = _core.keep_probability(int(c.counts[w]), int(total), 1e-3)
        f = c.counts[w] / total
        assert expected == pytest.approx(min(1.0, (np.sqrt(f / 1e-3) + 1) * 1e-3 / f))
        assert kept_centres[w] / c.counts[w] == pytest.approx(expected, abs=0.03)
    assert kept_centres[0] / c.counts[0] < 0.5  # the most frequent word is thinned out


def test_held_out_tail_and_chunks(corpus_file):
    path, _ = corpus_file
    c = load_text8(path, test_fraction=0.05, subsample=0, cache=False)
    assert c.train_end == round(len(c.ids) * 0.95)
    chunks = list(c.train_chunks(chunk_words=4000))
    assert len(chunks) == -(-c.train_end // 4000)
    assert sum(len(ch) for ch in chunks) == len(c.samples(0, c.train_end))
    test = c.test_split(max_points=100)
    assert len(test) == 100 and test.X.shape[1] == c.vocab_size


def test_bad_corpora_and_arguments(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("   \n")
    with pytest.raises(ValueError, match="too few words"):
        load_text8(empty, cache=False)
    with pytest.raises(FileNotFoundError):
        load_text8(tmp_path / "missing", cache=False)
    ok = tmp_path / "ok"
    ok.write_bytes(b"a b c \xff\xfe a b")
    assert load_text8(ok, cache=False).vocab_size == 4  # bytes that are not UTF-8 still make words
    with pytest.raises(ValueError, match="window"):
        load_text8(ok, window=0, cache=False)
