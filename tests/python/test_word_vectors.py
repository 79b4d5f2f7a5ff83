"""Word vectors: the vocabulary a network carries (checked, saved, refused when damaged), the
vector and cosine-neighbour lookups against a NumPy oracle, and the word2vec format (text and
binary) read back exactly by slide and by gensim. `slide export` is in test_cli_text8.py."""

import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide.model_file import ModelFileError
from slide.word_vectors import read_word2vec, write_word2vec

# a no-break space and a byte that is not UTF-8 (as a corpus may hold) are parts of words, not separators
WORDS = [f"w{i}" for i in range(40)] + ["naïve", "déjà", "x", "a\xa0b", b"caf\xe9".decode("utf-8", "surrogateescape")]


@pytest.fixture(scope="module")
def net():
    rng = np.random.default_rng(1)
    n = len(WORDS)
    X = sp.csr_matrix((np.ones(n * 4, np.float32), np.tile(np.arange(n), 4), np.arange(n * 4 + 1)), shape=(n * 4, n))
    Y = [[int(i), int((i + 1) % n)] for i in rng.integers(0, n, n * 4)]
    net = slide.Network(n, n, hidden=(12,), lsh=None, threads=1, seed=0, neighbours=0)
    net.fit(X, Y, epochs=2, progress=False)
    net.vocabulary = WORDS
    return net


def test_the_vocabulary_names_each_input_feature_once():
    net = slide.Network(3, 5, hidden=(4,), lsh=None, threads=1)
    assert net.vocabulary is None
    for bad, message in ((["a", "b"], "2 words for 3 word ids"),
                         (["a", "b", "a"], r"word 2 \('a'\) repeats word 0"),
                         (["a", "b c", "d"], "word 1 is 'b c': words must be non-empty strings without spaces"),
                         (["a", "b\tc", "d"], "word 1"), (["a", "b\r", "d"], "word 1"),
                         (["a", "", "d"], "word 1 is ''"), (["a", "b\n", "d"], "word 1"),
                         (["a", 7, "d"], "word 1 is 7"), ("abc", "not one string")):
        with pytest.raises(ValueError, match=message):
            net.vocabulary = bad
    assert net.vocabulary is None
    net.vocabulary = ("a", "b", "c")
    assert net.vocabulary == ["a", "b", "c"]
    with pytest.raises(ValueError, match="has no vocabulary"):
        slide.Network(3, 5, hidden=(4,), lsh=None, threads=1).get_word_vector("a")


def test_word_vectors_and_their_nearest_words_match_numpy(net):
    E = net.embeddings()
    assert E.shape == (len(WORDS), 12)
    np.testing.assert_array_equal(net.get_word_vector("déjà"), E[WORDS.index("déjà")])
    with pytest.raises(KeyError, match="'nope' is not in the vocabulary"):
        net.get_word_vector("nope")
    unit = E / np.linalg.norm(E, axis=1, keepdims=True)
    for word in ("w0", "naïve", "x"):
        i = WORDS.index(word)
        sims = unit @ unit[i]
        sims[i] = -np.inf
        expected = np.argsort(-sims, kind="stable")[:7]
        got = net.most_similar(word, topn=7)
        assert [w for w, _ in got] == [WORDS[j] for j in expected]
        np.testing.assert_allclose([s for _, s in got], sims[expected], rtol=1e-5)
    by_vector = net.most_similar(E[3], topn=3)
    assert by_vector[0][0] == "w3" and by_vector[0][1] == pytest.approx(1.0, abs=1e-6)
    assert len(net.most_similar("w1", topn=1000)) == len(WORDS) - 1
    with pytest.raises(ValueError, match="12 values"):
        net.most_similar(np.ones(5))
    with pytest.raises(ValueError, match="topn must be >= 1"):
        net.most_similar("w1", topn=0)


@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_files_read_back_exactly(net, tmp_path, binary):
    path = tmp_path / "vectors"
    net.save_word2vec(path, binary=binary)
    words, vectors = read_word2vec(path, binary=binary)
    assert words == WORDS
    np.testing.assert_array_equal(vectors, net.embeddings())  # text holds each float32 exactly too
    assert b"caf\xe9 " in path.read_bytes()  # the corpus's own bytes, not a replacement character
    assert path.read_bytes().startswith(f"{len(WORDS)} 12\n".encode())


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_reads_the_same_vectors_and_neighbours(net, tmp_path, binary):
    KeyedVectors = pytest.importorskip("gensim.models").KeyedVectors  # in the test extra: never skipped in CI
    path = tmp_path / "vectors"
    net.save_word2vec(path, binary=binary)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=binary, unicode_errors="surrogateescape")
    assert list(kv.index_to_key) == WORDS
    np.testing.assert_array_equal(kv.vectors, net.embeddings())
    for word in ("w5", "naïve"):
        theirs, ours = kv.most_similar(word, topn=10), net.most_similar(word, topn=10)
        assert [w for w, _ in theirs] == [w for w, _ in ours]
        np.testing.assert_allclose([s for _, s in theirs], [s for _, s in ours], rtol=1e-5)


def test_broken_word2vec_files_are_named_with_the_line(tmp_path):
    cases = {"header": (b"two 3\n", "line 1: expected the header"),
             "short": (b"2 3\na 1 2 3\nb 1 2\n", "line 3: expected a word and 3 numbers, got 3 fields"),
             "ends": (b"2 3\na 1 2 3\n", r"line 3: .*the file ends early"),
             "nan-word": (b"1 2\na 1 zz\n", "line 2: a value of 'a' is not a number")}
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=message):
            read_word2vec(tmp_path / name)
    (tmp_path / "bin").write_bytes(b"1 4\nabc " + np.ones(2, "<f4").tobytes())
    with pytest.raises(ValueError, match=r"word 1 \('abc'\) is cut short; expected 4 float32s"):
        read_word2vec(tmp_path / "bin", binary=True)
    with pytest.raises(FileNotFoundError, match="no word2vec file"):
        read_word2vec(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"3 words need a \(3, dimension\) array"):
        write_word2vec(tmp_path / "w", ["a", "b", "c"], np.zeros((2, 4)))
    assert not (tmp_path / "w").exists()


def test_the_vocabulary_travels_in_the_model_file(net, tmp_path):
    path = tmp_path / "m.npz"
    net.save(path)
    back = slide.Network.load(path)
    assert back.vocabulary == WORDS
    assert back.most_similar("w2", topn=5) == net.most_similar("w2", topn=5)
    # a file whose vocabulary bytes changed after its checksum was taken is refused
    damaged = tmp_path / "damaged.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "vocabulary.utf8.npy":
                data = data.replace(b"w17", b"w71")
            dst.writestr(item, data)
    with pytest.raises(ModelFileError, match="'vocabulary.utf8' fails its checksum"):
        slide.Network.load(damaged)
