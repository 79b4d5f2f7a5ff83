"""The shortlist re-ranker (slide.reranker): its engine scores equal a NumPy oracle of the hashed
per-label weights; training learns each point's labels over its shortlist (its own labels always
among them); fit, predict, predict_proba and model files carry it; bad arrays and hostile files are
refused with errors that name what is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._core import reranker_epoch, reranker_scores
from slide.datasets import make_train_test
from slide.datasets.synthetic import unit_rows
from slide.model_file import ModelFileError, read_arrays, read_header, write_model
from slide.reranker import WEIGHTS, ShortlistReranker

M64 = (1 << 64) - 1


def _slot(label: int, feature: int, bits: int) -> tuple[int, float]:
    """The oracle of cpp/rerank/shortlist_reranker.cpp's slot_of, in Python integers."""
    h = ((label * 0x9E3779B97F4A7C15) & M64) ^ ((feature * 0xC2B2AE3D27D4EB4F) & M64)
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & M64
    h ^= h >> 32
    return h & ((1 << bits) - 1), (-1.0 if h >> 63 else 1.0)


def _random_problem(seed=0, n=40, features=30, labels=20):
    rng = np.random.default_rng(seed)
    X = sp.random(n, features, density=0.2, format="csr", random_state=seed, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(n, np.float32), rng.integers(0, labels, n), np.arange(n + 1)), shape=(n, labels))
    return X, Y


def test_scores_equal_the_hashed_linear_oracle():
    X, _ = _random_problem()
    r = ShortlistReranker(30, 20, shortlist=5, bits=10)
    rng = np.random.default_rng(1)
    r.slots[:, 0] = rng.normal(size=r.slots.shape[0])
    r.bias[:, 0] = rng.normal(size=20)
    rows, labels = rng.integers(0, 40, 200), rng.integers(0, 20, 200)
    got = r.scores(X, rows, labels, threads=2)
    U = unit_rows(X)
    for p, (row, label) in enumerate(zip(rows, labels)):
        want = r.bias[label, 0]
        for f, v in zip(U.indices[U.indptr[row]:U.indptr[row + 1]], U.data[U.indptr[row]:U.indptr[row + 1]]):
            slot, sign = _slot(int(label), int(f), 10)
            want += v * sign * r.slots[slot, 0]
        assert got[p] == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_training_ranks_each_points_labels_first_even_when_the_shortlist_misses_them():
    # Each label is announced by one feature of its own, buried among shared noise features: a
    # per-label linear rule the re-ranker must find. The candidates never hold the true label.
    rng = np.random.default_rng(3)
    n, labels, noise = 600, 30, 40
    y = rng.integers(0, labels, n)
    rows = np.repeat(np.arange(n), 4)
    cols = np.column_stack([y, labels + rng.integers(0, noise, (n, 3))]).ravel()
    X = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(n, labels + noise))
    Y = sp.csr_matrix((np.ones(n, np.float32), y, np.arange(n + 1)), shape=(n, labels))
    wrong = (y[:, None] + 1 + np.arange(5)[None, :]) % labels
    r = ShortlistReranker(labels + noise, labels, shortlist=6, bits=12)
    losses = r.fit(X, Y, wrong.astype(np.int32), epochs=5, threads=2)
    assert losses[-1] < losses[0] / 2
    shortlist = np.column_stack([y, wrong])
    scores = r.scores(X, np.repeat(np.arange(n), 6), shortlist.ravel()).reshape(n, 6)
    assert np.mean(scores.argmax(1) == 0) > 0.95


def test_bad_arrays_are_refused_with_what_is_wrong():
    X, Y = _random_problem()
    U = unit_rows(X)
    slots, bias = np.zeros((64, 2), np.float32), np.zeros((20, 2), np.float32)
    args = (U.indptr, U.indices, U.data, 30)
    with pytest.raises(ValueError, match="label id 20 lies outside"):
        reranker_scores(*args, np.zeros(1, np.int64), np.array([20], np.int32), slots, bias, 1)
    with pytest.raises(ValueError, match="row 40 lies outside"):
        reranker_scores(*args, np.array([40], np.int64), np.zeros(1, np.int32), slots, bias, 1)
    with pytest.raises(ValueError, match="power-of-two"):
        reranker_scores(*args, np.zeros(1, np.int64), np.zeros(1, np.int32), np.zeros((48, 2), np.float32), bias, 1)
    cand = np.zeros((40, 3), np.int32)
    order = np.arange(40, dtype=np.int64)
    y = (Y.indptr.astype(np.int64), Y.indices.astype(np.int32))
    with pytest.raises(ValueError, match="label id -2 lies outside"):
        reranker_epoch(*args, *y, np.full((40, 3), -2, np.int32), order, slots, bias, 0.1, 1)
    with pytest.raises(ValueError, match="one row per row of x"):
        reranker_epoch(*args, *y, cand[:39], order, slots, bias, 0.1, 1)
    with pytest.raises(ValueError, match="outside \\[0, 40\\)"):
        reranker_epoch(*args, *y, cand, order + 1, slots, bias, 0.1, 1)
    with pytest.raises(ValueError, match="learning rate"):
        reranker_epoch(*args, *y, cand, order, slots, bias, float("nan"), 1)


RERANK = 10


def reranked(folder, neighbours: int):
    """(network, its model file, test split): a network whose fit trains a re-ranker of its
    RERANK best labels, with the vote of `neighbours` points when positive."""
    train, test = make_train_test(1200, 300, 400, 9000, seed=4, avg_nnz=12, avg_labels=2)
    net = slide.Network(400, 9000, hidden=(16,), mode="batch", rerank=RERANK, neighbours=neighbours, threads=2,
                        seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    net.save(folder / "m.npz")
    return net, folder / "m.npz", test


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return reranked(tmp_path_factory.mktemp("reranked"), neighbours=0)


def test_fit_trains_the_reranker_and_picks_its_weight_on_validation(trained):
    net, _, test = trained
    assert net.reranker is not None and net.reranker.shortlist == 10
    assert net.rerank_weight in WEIGHTS
    assert np.any(net.reranker.slots[:, 0] != 0)
    ids, scores = net.predict(test.X, k=5)
    assert np.all(np.diff(scores, axis=1) <= 0)
    ids_p, proba = net.predict_proba(test.X, k=5)
    assert np.array_equal(ids_p, ids) or net.rerank_weight == 0
    assert np.all(proba.sum(1) <= 1.0 + 1e-5) and np.all(proba > 0)


def test_a_model_file_round_trips_the_reranker(trained):
    net, path, test = trained
    back = slide.Network.load(path)
    assert back.rerank_weight == net.rerank_weight and back.reranker.shortlist == net.reranker.shortlist
    assert np.array_equal(back.reranker.slots[:, 0], net.reranker.slots[:, 0])
    assert np.array_equal(back.predict(test.X, k=5)[0], net.predict(test.X, k=5)[0])


def tampered(path, out, change):
    """A copy of the model file with `change` applied to its arrays and every checksum recomputed."""
    header, arrays = read_header(path), read_arrays(path)
    header.pop("checksums")
    change(arrays)
    write_model(out, header, arrays)
    return out


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update({"reranker.bias": a["reranker.bias"][:-1]}), "one per label"),
    (lambda a: a.update({"reranker.weights": a["reranker.weights"][:-1]}), "power of two"),
    (lambda a: a["reranker.weights"].__setitem__(3, np.nan), "NaN or inf"),
    (lambda a: a.update({"reranker.shortlist": np.array([0], np.int64)}), "one count in"),
    (lambda a: a.pop("reranker.bias"), "lacks arrays"),
])
def test_a_hostile_reranker_in_a_model_file_is_refused(trained, tmp_path, change, message):
    _, path, _ = trained
    bad = tampered(path, tmp_path / "bad.npz", change)
    with pytest.raises(ModelFileError, match=message) as e:
        slide.Network.load(bad)
    assert str(bad) in str(e.value)


class _OneRank:
    """A communicator of one rank: what an MPI job of size 1 does to the re-ranker's arrays."""

    size = 1

    def sum(self, data):
        pass

    def total(self, value):
        return float(value)


class _TwoEqualRanks(_OneRank):
    """Two ranks that trained exactly the same changes: their sum doubles every change."""

    size = 2

    def sum(self, data):
        data *= 2

    def total(self, value):
        return 2.0 * value


def test_training_over_one_rank_is_training_in_one_process():
    """The MPI path over one rank trains what `ShortlistReranker.fit` trains, bit for bit, with
    its losses; over two ranks each rank's change counts in full (summed, not averaged away)."""
    from types import SimpleNamespace

    from slide.prediction.reranker_training import _fit_over_ranks

    X, Y = _random_problem(seed=4, n=90)
    rng = np.random.default_rng(2)  # a network's shortlist: distinct labels, -1 where it ran short
    candidates = np.array([rng.permutation(20)[:6] for _ in range(90)], np.int32)
    candidates[::7, 4:] = -1
    alone = ShortlistReranker(30, 20, shortlist=6, bits=10)
    want = alone.fit(X, Y, candidates, epochs=3, threads=1, seed=7)
    ranked = ShortlistReranker(30, 20, shortlist=6, bits=10)
    got = _fit_over_ranks(SimpleNamespace(comm=_OneRank(), seed=7, threads=1), ranked, X, Y, candidates, 3)
    np.testing.assert_array_equal(ranked.slots, alone.slots)
    np.testing.assert_array_equal(ranked.bias, alone.bias)
    np.testing.assert_allclose(got, want, rtol=1e-6)

    doubled = ShortlistReranker(30, 20, shortlist=6, bits=10)
    _fit_over_ranks(SimpleNamespace(comm=_TwoEqualRanks(), seed=7, threads=1), doubled, X, Y, candidates, 1)
    once = ShortlistReranker(30, 20, shortlist=6, bits=10)
    once.fit(X, Y, candidates, epochs=1, threads=1, seed=7)
    np.testing.assert_allclose(doubled.bias, 2 * once.bias, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(doubled.slots, 2 * once.slots, rtol=1e-5, atol=1e-6)
