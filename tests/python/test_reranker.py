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
from slide.reranker import (FEW_POINTS_PER_LABEL, HINGE_C, HINGE_C_BETWEEN, HINGE_C_FEW_POINTS, MANY_POINTS_PER_LABEL,
                            WEIGHTS, LabelPoints, ShortlistReranker, hinge_cs)

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
    assert net.rerank_weight in WEIGHTS or net.weight_choice.learned  # learned weights lie off the grid
    assert net.weight_choice is not None and net.weight_choice.grid[1] in WEIGHTS
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


class _ThreadRanks:
    """Two ranks as two threads of one process: `sum` and `total` add both ranks' values."""

    size = 2

    def __init__(self):
        import threading

        self.barrier, self.parts = threading.Barrier(2), [None, None]

    def rank(self, r):
        comm = self

        class Rank:
            size = 2

            def sum(self, data):
                comm.parts[r] = data.copy()
                comm.barrier.wait()
                total = comm.parts[0] + comm.parts[1]
                comm.barrier.wait()
                data[...] = total

            def total(self, value):
                out = np.array([float(value)])
                self.sum(out)
                return float(out[0])
        return Rank()


def _on_two_ranks(work):
    """[work(comm, 0), work(comm, 1)], each rank in its own thread with a `_ThreadRanks` comm."""
    import threading

    ranks, got = _ThreadRanks(), [None, None]

    def run(r):
        got[r] = work(ranks.rank(r), r)
    threads = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def _ranked_net(comm, candidates):
    from types import SimpleNamespace

    # rerank 3: lists of HINGE_SHORTLIST_FACTOR (4) x 3 = 12 labels
    return SimpleNamespace(comm=comm, seed=7, threads=1, input_dim=30, output_dim=20, rerank=3, lists=candidates)


def _shortlists_of(net, X, width, progress=False):
    return net.lists[:, :width]


def test_one_rank_solves_what_one_process_solves(monkeypatch):
    """The MPI path over one rank is `ShortlistReranker.fit_hinge` in one process, bit for bit,
    with its loss."""
    from slide.prediction import reranker_training

    X, Y = _random_problem(seed=4, n=90)
    rng = np.random.default_rng(2)  # a network's lists: distinct labels, -1 where it ran short
    candidates = np.array([rng.permutation(20)[:12] for _ in range(90)], np.int32)
    candidates[::7, 8:] = -1
    monkeypatch.setattr(reranker_training, "shortlists", _shortlists_of)
    alone = ShortlistReranker(30, 20, shortlist=3, trained_on=12)
    lists_c = hinge_cs(LabelPoints.of(candidates, Y, 20).per_label())[0]  # the C the lists call for
    want = alone.fit_hinge(X, Y, candidates, threads=1, seed=7, c=lists_c)
    ranked, got = reranker_training.reranker_from_memory(_ranked_net(_OneRank(), candidates), X, Y)
    assert ranked.hinge_c == lists_c
    assert (ranked.shortlist, ranked.trained_on) == (3, 12)
    np.testing.assert_array_equal(ranked.slots, alone.slots)
    np.testing.assert_array_equal(ranked.bias, alone.bias)
    assert got == pytest.approx([want], rel=1e-6)
    assert np.any(alone.slots[:, 0] != 0)


def _two_ranks(monkeypatch, X, Y, candidates, rounds):
    """The re-ranker two ranks (threads) train over `rounds` rounds, the first holding the first
    half of the points and the second the rest (as a file's byte ranges give them)."""
    from slide.prediction import reranker_training

    monkeypatch.setattr(reranker_training, "shortlists", _shortlists_of)
    monkeypatch.setattr(reranker_training, "HINGE_ROUNDS", rounds)
    half = X.shape[0] // 2

    def rank(comm, r):
        share = slice(0, half) if r == 0 else slice(half, None)
        return reranker_training.reranker_from_memory(_ranked_net(comm, candidates[share]), X[share], Y[share],
                                                      c=HINGE_C)[0]  # the C `alone` solves at
    got = _on_two_ranks(rank)
    np.testing.assert_array_equal(got[0].slots, got[1].slots)
    np.testing.assert_array_equal(got[0].bias, got[1].bias)
    return got[0]


def test_rounds_over_two_ranks_converge_to_the_one_process_solution(monkeypatch):
    """CoCoA+ over two ranks holding different halves of the points: both end with the same
    re-ranker, and more rounds bring its scores closer to what one process solves over every
    point; adding the two ranks' changes without CoCoA+'s scaling (adders=1) converges slower."""
    X, Y = _random_problem(seed=5, n=120)
    rng = np.random.default_rng(3)
    candidates = np.array([rng.permutation(20)[:12] for _ in range(120)], np.int32)
    alone = ShortlistReranker(30, 20, shortlist=3, trained_on=12)
    alone.fit_hinge(X, Y, candidates, threads=1, seed=7, tolerance=1e-5, max_iterations=5000)
    rows = np.repeat(np.arange(120), 12)
    want = alone.scores(X, rows, candidates.ravel())

    def error(reranker):
        return float(np.abs(reranker.scores(X, rows, candidates.ravel()) - want).max())

    errors = [error(_two_ranks(monkeypatch, X, Y, candidates, rounds)) for rounds in (1, 10, 100)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.1, errors

    unscaled = ShortlistReranker(30, 20, shortlist=3, trained_on=12)  # the same 10 rounds, adders=1
    halves = (slice(0, 60), slice(60, 120))
    duals = [unscaled.new_duals(candidates[h], Y[h]) for h in halves]
    for _ in range(10):
        start = (unscaled.slots.copy(), unscaled.bias.copy())
        changes = []
        for h, d in zip(halves, duals):
            unscaled.slots[:], unscaled.bias[:] = start
            unscaled.fit_hinge(X[h], Y[h], candidates[h], threads=1, seed=7, duals=d)
            changes.append((unscaled.slots - start[0], unscaled.bias - start[1]))
        unscaled.slots[:] = start[0] + changes[0][0] + changes[1][0]
        unscaled.bias[:] = start[1] + changes[0][1] + changes[1][1]
    assert error(unscaled) > errors[1], (error(unscaled), errors)


def test_ranks_pick_the_c_of_every_ranks_lists_together():
    """Under MPI the C the lists call for comes from the points per label over every rank's
    lists: here each rank's half holds fewer than FEW_POINTS_PER_LABEL a label and the whole
    more, so a rank counting only its own would solve at HINGE_C_FEW_POINTS."""
    from slide.prediction import reranker_training

    X, Y = _random_problem(seed=8, n=200)
    candidates = np.tile(np.arange(12, dtype=np.int32), (200, 1))  # labels 0-11 on every list: 200 points each
    whole = LabelPoints.of(candidates, Y, 20).per_label()
    half = LabelPoints.of(candidates[:100], Y[:100], 20).per_label()
    assert half < FEW_POINTS_PER_LABEL <= whole < MANY_POINTS_PER_LABEL

    def rank(comm, r):
        share = slice(0, 100) if r == 0 else slice(100, None)
        return reranker_training.lists_c(_ranked_net(comm, candidates[share]),
                                         LabelPoints.of(candidates[share], Y[share], 20))
    assert _on_two_ranks(rank) == [HINGE_C_BETWEEN, HINGE_C_BETWEEN]
    assert reranker_training.lists_c(_ranked_net(None, candidates[:100]),
                                     LabelPoints.of(candidates[:100], Y[:100], 20)) == HINGE_C_FEW_POINTS


def test_fit_hinge_keeps_the_duals_it_is_given():
    """With `duals`, a second call on the same points starts where the first ended: it changes
    little, where starting the duals again at zero counts every point twice."""
    X, Y = _random_problem(seed=6, n=80)
    rng = np.random.default_rng(4)
    candidates = np.array([rng.permutation(20)[:8] for _ in range(80)], np.int32)
    kept = ShortlistReranker(30, 20, shortlist=2, trained_on=8)
    duals = kept.new_duals(candidates, Y)
    kept.fit_hinge(X, Y, candidates, duals=duals, tolerance=1e-4, max_iterations=500)
    assert duals.min() >= 0 and np.count_nonzero(duals) > 0
    once = kept.slots.copy()
    kept.fit_hinge(X, Y, candidates, duals=duals, tolerance=1e-4, max_iterations=500)
    forgot = ShortlistReranker(30, 20, shortlist=2, trained_on=8)
    forgot.fit_hinge(X, Y, candidates, tolerance=1e-4, max_iterations=500)
    forgot.fit_hinge(X, Y, candidates, tolerance=1e-4, max_iterations=500)
    assert np.abs(kept.slots - once).max() < 0.01 * np.abs(once).max()
    assert np.abs(forgot.slots - once).max() > 0.1 * np.abs(once).max()
    with pytest.raises(ValueError, match="one value per"):
        kept.fit_hinge(X, Y, candidates, duals=duals[:-1])
    with pytest.raises(ValueError, match="float32"):
        kept.fit_hinge(X, Y, candidates, duals=duals.astype(np.float64))
    negative = duals.copy()
    negative[3] = -1.0
    with pytest.raises(ValueError, match=r"alpha\[3\] must be >= 0"):
        kept.fit_hinge(X, Y, candidates, duals=negative)
    with pytest.raises(ValueError, match="adders must be at least 1"):
        kept.fit_hinge(X, Y, candidates, adders=0)


def test_at_vote_weight_zero_the_neighbours_labels_stay_among_the_reranked_candidates(tmp_path):
    """Tuning scores vote weight 0 with the neighbours' labels among the candidates the re-ranker
    re-scores; prediction at that weight must rank the same candidates, not the network's alone."""
    from slide.prediction.fused import VotedNetwork
    net, _, test = reranked(tmp_path, neighbours=5)
    net.neighbour_weight, net.rerank_weight = 0.0, 8.0
    tuned, _ = VotedNetwork(net, net.memory, net.neighbours, net.reranker).fusion(test.X, 5, True)
    without, _ = VotedNetwork(net, None, net.neighbours, net.reranker).fusion(test.X, 5, True)
    expected, _ = tuned.top(0.0, 5, net.rerank_weight)
    assert not np.array_equal(expected, without.top(0.0, 5, net.rerank_weight)[0])  # the voted labels matter here
    assert np.array_equal(net.predict(test.X, k=5)[0], expected)
