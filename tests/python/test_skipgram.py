"""slide.SkipGram, the word2vec-style trainer: its update rule and learning-rate schedule against a
NumPy oracle, its negative-word distribution, reproducibility, what it learns, and its file."""

import numpy as np
import pytest

from slide.datasets.text8 import load_text8
from slide.skipgram import SkipGram

WORDS = [f"w{i}" for i in range(30)]


def _oracle(W, C, ids, lr_begin, lr_end):
    """One pass of skip-gram with window 1, no negatives, no subsampling, one thread: every word's
    neighbours (within stretches of 1,000) step towards the centre word's output vector."""
    W, C = W.astype(np.float64), C.astype(np.float64)
    n = len(ids)
    for start in range(0, n, 1000):
        lr = lr_begin + (lr_end - lr_begin) * start / n
        stretch = ids[start:start + 1000]
        for i, centre in enumerate(stretch):
            for j in (i - 1, i + 1):
                if 0 <= j < len(stretch):
                    w = W[stretch[j]]
                    logit = w @ C[centre]
                    p = 1.0 if logit > 6 else 0.0 if logit < -6 else 1 / (1 + np.exp(-logit))
                    g = (1 - p) * lr
                    grad = g * C[centre]
                    C[centre] += g * w
                    W[stretch[j]] += grad
    return W, C


def test_one_pass_matches_the_numpy_oracle():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30, 2500)
    model = SkipGram(WORDS, np.bincount(ids, minlength=30), dim=8, window=1, negatives=0, subsample=0,
                     learning_rate=0.5, min_learning_rate=0.1, threads=1, seed=3)
    W0 = model.embeddings()
    model._core.context_vectors[...] = rng.normal(size=(30, 8)) * 0.3  # a non-zero output side to start
    C0 = np.array(model._core.context_vectors)
    out = model._core.train(ids.astype(np.int32), 0, len(ids), 0.5, 0.1, 1, 0, 0.0, 1, 0)
    assert out["words"] == 2500 and out["pairs"] == 2 * 2500 - 2 * 3  # each stretch's two ends have one neighbour
    W, C = _oracle(W0, C0, ids, 0.5, 0.1)
    np.testing.assert_allclose(model.embeddings(), W, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model._core.context_vectors, C, rtol=1e-4, atol=1e-5)


def test_negatives_follow_the_unigram_distribution_to_the_three_quarters():
    counts = np.array([1000, 300, 100, 10, 1, 0], np.int64)
    model = SkipGram([f"w{i}" for i in range(6)], counts, dim=4, threads=1)
    draws = np.bincount(model._core.draw_negatives(400_000, 7), minlength=6) / 400_000
    expected = np.maximum(counts, 1) ** 0.75
    np.testing.assert_allclose(draws, expected / expected.sum(), atol=0.003)


def _topic_corpus(n=60_000, seed=0):
    """Two topics of 15 words each, in runs of 40 words: words of a topic share their contexts."""
    rng = np.random.default_rng(seed)
    runs = [rng.integers(0, 15, 40) + 15 * (k % 2) for k in range(n // 40)]
    return np.concatenate(runs).astype(np.int32)


def test_it_learns_which_words_share_contexts_and_its_loss_falls():
    ids = _topic_corpus()
    model = SkipGram(WORDS, np.bincount(ids, minlength=30), dim=16, window=3, threads=2, seed=1)
    history = model.fit(ids, epochs=3, progress=False)
    assert [h["epoch"] for h in history] == [1, 2, 3] and all(h["words"] == len(ids) for h in history)
    assert history[-1]["loss"] < history[0]["loss"]
    for word in ("w0", "w20"):
        topic = int(word[1:]) // 15
        assert all(int(w[1:]) // 15 == topic for w, _ in model.most_similar(word, topn=10))


def test_one_thread_is_reproducible_and_the_seed_matters():
    ids = _topic_corpus(8000)
    counts = np.bincount(ids, minlength=30)
    a, b, c = (SkipGram(WORDS, counts, dim=8, threads=1, seed=s) for s in (5, 5, 6))
    for m in (a, b, c):
        m.fit(ids, epochs=2, progress=False)
    np.testing.assert_array_equal(a.embeddings(), b.embeddings())
    assert not np.array_equal(a.embeddings(), c.embeddings())


def test_bad_settings_and_corpora_are_refused():
    counts = np.ones(30, np.int64)
    for kwargs, message in ((dict(dim=0), "dim must be an integer >= 1"), (dict(window=0), "window"),
                            (dict(negatives=-1), "negatives"), (dict(subsample=-1.0), "subsample"),
                            (dict(learning_rate=0.0), "learning_rate must be > 0"), (dict(threads=0), "threads"),
                            (dict(learning_rate=float("nan")), "finite")):
        with pytest.raises(ValueError, match=message):
            SkipGram(WORDS, counts, **kwargs)
    with pytest.raises(ValueError, match="29 words for 30 word ids"):
        SkipGram(WORDS[:29], counts)
    with pytest.raises(ValueError, match=r"word 29 \('w0'\) repeats word 0"):
        SkipGram(WORDS[:29] + ["w0"], counts)
    with pytest.raises(ValueError, match="counts must be"):
        SkipGram(WORDS, -counts)
    model = SkipGram(WORDS, counts, dim=4, threads=1)
    with pytest.raises(ValueError, match=r"word ids must lie in \[0, 30\)"):
        model.fit(np.array([1, 2, 30]), progress=False)
    with pytest.raises(ValueError, match="1-D array of word ids"):
        model.fit(np.array([0.5, 1.0]), progress=False)
    with pytest.raises(ValueError, match="epochs"):
        model.fit(np.array([1, 2]), epochs=0, progress=False)


def test_text8_corpus_save_load_and_word2vec(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "text8"
    path.write_text(" ".join(f"w{i}" for i in _topic_corpus(20_000, seed=2)) + "\n")
    corpus = load_text8(path, cache=False)
    model = SkipGram.from_corpus(corpus, dim=12, threads=1, seed=rng.integers(100))
    model.fit(corpus, epochs=1, progress=False)
    assert model.vocabulary == corpus.words
    model.save(tmp_path / "m.npz")
    back = SkipGram.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.embeddings(), model.embeddings())
    assert back.get_config() == model.get_config() and back.most_similar("w3") == model.most_similar("w3")
    back.fit(corpus, epochs=1, progress=False)  # training continues from the loaded vectors
    model.save_word2vec(tmp_path / "v.txt")
    from slide.word_vectors import read_word2vec

    words, vectors = read_word2vec(tmp_path / "v.txt")
    assert words == corpus.words and np.array_equal(vectors, model.embeddings())
    raw = bytearray((tmp_path / "m.npz").read_bytes())
    raw[len(raw) // 3] ^= 0x40
    (tmp_path / "bad.npz").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="bad.npz"):
        SkipGram.load(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError):
        SkipGram.load(tmp_path / "missing.npz")
