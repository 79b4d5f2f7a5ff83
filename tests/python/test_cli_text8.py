"""`slide train --dataset text8` end to end, in subprocesses: the skip-gram objective (the default)
and SLIDE's softmax objective, `slide export` of either, `slide info`, and the settings each
objective refuses."""

import subprocess
import sys

import numpy as np
import pytest

import slide
from slide.skipgram import SkipGram
from slide.word_vectors import read_word2vec


def _slide(*args, cwd):
    return subprocess.run([sys.executable, "-m", "slide", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A data dir with a text8 corpus: two topics of words in runs, a no-break space inside a word
    and a byte that is not UTF-8 (both are parts of words)."""
    root = tmp_path_factory.mktemp("text8data")
    rng = np.random.default_rng(0)
    words = [f"w{i}".encode() for i in range(58)] + ["x\xa0y".encode(), b"caf\xe9"]
    runs = [rng.integers(0, 30, 30) + 30 * (k % 2) for k in range(1000)]
    (root / "text8").mkdir()
    (root / "text8" / "text8").write_bytes(b" ".join(words[i] for i in np.concatenate(runs)) + b"\n")
    return root, [w.decode("utf-8", "surrogateescape") for w in words]


def test_skipgram_is_the_default_and_exports_its_vectors(corpus, tmp_path):
    data, words = corpus
    run = tmp_path / "run"
    r = _slide("train", "--dataset", "text8", "--data-dir", data, "--epochs", "2", "--quiet", "--threads", "2",
               "--set", "skipgram.dim=16", "--out", run, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "SkipGram(" in r.stdout and "epoch 2/2" in r.stdout and "words/s" in r.stdout
    model = SkipGram.load(run / "model.npz")
    assert model.dim == 16 and set(model.vocabulary) == set(words)
    assert all(int(w[1:]) // 30 == 0 for w, _ in model.most_similar("w3", topn=5))  # it learned the topics
    for binary in (False, True):
        out = tmp_path / f"vectors-{binary}.txt"
        r = _slide("export", run, "--out", out, *(["--binary"] if binary else []), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert f"wrote {len(words):,} word vectors of 16 dimensions" in r.stdout
        got_words, vectors = read_word2vec(out, binary=binary)
        assert got_words == model.vocabulary
        np.testing.assert_array_equal(vectors, model.embeddings())
    r = _slide("info", run, cwd=tmp_path)
    assert r.returncode == 0 and "skip-gram word vectors: dim 16" in r.stdout and "epochs: 2 of 2" in r.stdout
    for command in (["evaluate", run], ["train", "--resume", run]):
        r = _slide(*command, cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "skip-gram" in r.stderr
    r = _slide("export", run, "--out", run / "model.npz", cwd=tmp_path)
    assert r.returncode == 2 and "it is the model file" in r.stderr


def test_the_softmax_objective_trains_a_network_that_carries_its_words(corpus, tmp_path):
    data, words = corpus
    run = tmp_path / "run"
    r = _slide("train", "--dataset", "text8", "--data-dir", data, "--epochs", "1", "--quiet", "--threads", "2",
               "--set", "text8.objective=softmax", "--set", "network.hidden=[24]", "--out", run, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    net = slide.Network.load(run / "model.npz")
    assert set(net.vocabulary) == set(words)
    r = _slide("export", run, "--out", tmp_path / "v.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got_words, vectors = read_word2vec(tmp_path / "v.txt")
    assert got_words == net.vocabulary and np.array_equal(vectors, net.embeddings())


@pytest.mark.parametrize("flags, message", [
    (["--set", "network.hidden=[64]"], "network.hidden train the softmax objective"),
    (["--mode", "dense"], "network.mode train the softmax objective"),
    (["--set", "text8.objective=softmax", "--set", "skipgram.dim=8"], "need text8.objective"),
    (["--set", "skipgram.negatives=-1"], "skipgram.negatives must be >= 0"),
])
def test_settings_of_the_other_objective_are_refused(corpus, tmp_path, flags, message):
    data, _ = corpus
    r = _slide("train", "--dataset", "text8", "--data-dir", data, "--quiet", "--out", tmp_path / "r", *flags,
               cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_export_of_a_network_without_words_is_refused(tmp_path):
    net = slide.Network(5, 5, hidden=(4,), lsh=None, threads=1)
    net.save(tmp_path / "xc.npz")
    r = _slide("export", tmp_path / "xc.npz", "--out", tmp_path / "v.txt", cwd=tmp_path)
    assert r.returncode == 2 and "has no vocabulary" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "v.txt").exists()
