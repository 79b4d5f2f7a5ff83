"""The re-ranker's squared hinge (`ShortlistReranker.fit_hinge`, cpp/rerank/dual_cd_hinge.cpp):
each label's classifier equals liblinear's on the same points (scikit-learn's LinearSVC, the
oracle); the points are the rows that shortlist the label; a network trains it in one process;
bad arrays are refused with what is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._core import reranker_dual_cd
from slide.datasets import make_train_test
from slide.datasets.synthetic import unit_rows
from slide.prediction.reranker_training import shortlists
from slide.reranker import HINGE_SHORTLIST_FACTOR, ShortlistReranker, label_points


def _problem(seed=0, n=240, features=40, labels=6, width=3):
    """Each label's positives follow a planted linear rule of the features, with noise."""
    rng = np.random.default_rng(seed)
    X = unit_rows(sp.random(n, features, density=0.25, format="csr", random_state=seed, dtype=np.float32))
    rule = rng.normal(size=(features, labels))
    scores = X @ rule + 0.3 * rng.normal(size=(n, labels))
    Y = sp.csr_matrix((scores > np.quantile(scores, 0.8, axis=0)).astype(np.float32))
    candidates = np.array([rng.permutation(labels)[:width] for _ in range(n)], np.int32)
    candidates[::5, -1] = -1  # shortlists that ran short
    return X, Y, candidates


def test_label_points_are_the_rows_that_shortlist_or_own_the_label():
    candidates = np.array([[1, 2], [0, -1], [2, 1]], np.int32)
    Y = sp.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], np.float32))
    indptr, rows, positive = label_points(candidates, Y, 3)
    per_label = [(rows[indptr[l]:indptr[l + 1]].tolist(), positive[indptr[l]:indptr[l + 1]].tolist())
                 for l in range(3)]
    assert per_label == [([1], [0]), ([0, 2], [1, 0]), ([0, 1, 2], [0, 1, 0])]


def _label_points_by_scipy(candidates, Y, n_labels):
    """The oracle: every (label, row) pair of the shortlists and of Y through SciPy's COO -> CSR,
    duplicates summed (a label both listed and owned, or listed twice, is one point)."""
    Y = sp.csr_matrix(Y)
    n, width = candidates.shape
    keep = candidates.ravel() >= 0
    listed_rows = np.repeat(np.arange(n), width)[keep]
    own_rows = np.repeat(np.arange(n), np.diff(Y.indptr))
    pairs = sp.csr_matrix((np.concatenate([np.zeros(keep.sum()), np.ones(own_rows.size)]),
                           (np.concatenate([candidates.ravel()[keep], Y.indices]), np.concatenate([listed_rows, own_rows]))),
                          shape=(n_labels, n))
    pairs.sum_duplicates()
    return pairs.indptr, pairs.indices, (pairs.data > 0).astype(np.uint8)


@pytest.mark.parametrize("seed", range(5))
def test_label_points_match_scipys_pairs_with_repeats_and_empty_slots(seed):
    rng = np.random.default_rng(seed)
    n, labels, width = 300, 50, 7
    candidates = rng.integers(-1, labels, size=(n, width)).astype(np.int32)  # repeats and -1 included
    Y = sp.random(n, labels, density=0.05, format="csr", random_state=seed)
    Y.data[::7] = 0.0  # an explicit zero is still a label the row has
    for got, want in zip(label_points(candidates, Y, labels), _label_points_by_scipy(candidates, Y, labels)):
        np.testing.assert_array_equal(got, want)


def test_label_points_leave_the_callers_labels_untouched_and_read_unsorted_ones():
    candidates = np.array([[3, -1], [0, 2]], np.int32)
    Y = sp.csr_matrix((np.ones(3, np.float32), np.array([2, 0, 1]), np.array([0, 2, 3])), shape=(2, 4))
    assert not Y.has_sorted_indices
    indptr, rows, positive = label_points(candidates, Y, 4)
    assert Y.indices.tolist() == [2, 0, 1]
    assert rows.tolist() == [0, 1, 1, 0, 1, 0] and positive.tolist() == [1, 0, 1, 1, 0, 0]
    assert indptr.tolist() == [0, 2, 3, 5, 6]


@pytest.mark.parametrize("candidates, labels, message", [
    (np.array([[0, 4]], np.int32), 4, "label id 4 lies outside"),
    (np.array([[0, -2]], np.int32), 4, "label id -2 lies outside"),
    (np.array([[0], [1]], np.int32), 4, "one row per row of y"),
])
def test_label_points_refuse_labels_out_of_range_and_mismatched_rows(candidates, labels, message):
    Y = sp.csr_matrix(np.array([[1, 0, 0, 0]], np.float32))
    with pytest.raises(ValueError, match=message):
        label_points(candidates, Y, labels)


def test_each_label_is_liblinears_squared_hinge_on_its_points():
    svm = pytest.importorskip("sklearn.svm")
    X, Y, candidates = _problem()
    r = ShortlistReranker(X.shape[1], Y.shape[1], shortlist=3, bits=22)  # no two pairs share a slot
    loss = r.fit_hinge(X, Y, candidates, max_iterations=5000, tolerance=1e-6, threads=2)
    assert 0.0 < loss < 1.0
    assert not r.slots[:, 1].any() and not r.bias[:, 1].any()  # Adagrad's sums are left alone
    indptr, rows, positive = label_points(candidates, Y, Y.shape[1])
    want_loss = 0.0
    for label in range(Y.shape[1]):
        mine, y = rows[indptr[label]:indptr[label + 1]], positive[indptr[label]:indptr[label + 1]]
        assert 0 < y.sum() < len(y)
        oracle = svm.LinearSVC(C=1.0, tol=1e-10, max_iter=100_000).fit(X[mine].astype(np.float64), y)
        got = r.scores(X, mine, np.full(len(mine), label, np.int32))
        np.testing.assert_allclose(got, oracle.decision_function(X[mine].astype(np.float64)), atol=1e-4)
        want_loss += (np.maximum(0.0, 1.0 - np.where(y > 0, got, -got)) ** 2).sum()
    assert loss == pytest.approx(want_loss / len(rows), rel=1e-4)  # the mean over every (point, label)


def test_the_solver_continues_from_the_weights_it_finds_and_is_seeded():
    X, Y, candidates = _problem(seed=1)
    a, b = (ShortlistReranker(X.shape[1], Y.shape[1], shortlist=3, bits=16) for _ in range(2))
    a.fit_hinge(X, Y, candidates, threads=1, seed=3)
    b.fit_hinge(X, Y, candidates, threads=1, seed=3)
    np.testing.assert_array_equal(a.slots, b.slots)  # one thread: the same order, the same weights
    loose = ShortlistReranker(X.shape[1], Y.shape[1], shortlist=3, bits=16)
    first = loose.fit_hinge(X, Y, candidates, max_iterations=1, tolerance=0.0, threads=1)
    again = loose.fit_hinge(X, Y, candidates, max_iterations=1, tolerance=0.0, threads=1)
    assert again < first  # the second call starts where the first stopped


def test_a_network_trains_its_reranker_by_the_hinge_in_one_process():
    train, test = make_train_test(800, 200, 300, 600, seed=2, avg_nnz=12, avg_labels=2)
    net = slide.Network(300, 600, hidden=(16,), mode="batch", rerank=10, neighbours=0, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, progress=False)
    losses = net.fit_reranker(train.X, train.Y)
    assert len(losses) == 1 and losses[0] > 0  # one solve, not epochs
    assert net.reranker.slots[:, 0].any() and not net.reranker.slots[:, 1].any()
    # The labels trained (a bias moved) are those in some point's top 4 x rerank or own labels;
    # prediction still re-scores the top rerank.
    def listed(width):
        return set(shortlists(net, train.X, width).ravel()) | set(train.Y.indices)
    wide = listed(HINGE_SHORTLIST_FACTOR * 10)
    assert wide > listed(10)
    assert set(np.flatnonzero(net.reranker.bias[:, 0])) == wide - {-1}
    assert net.reranker.shortlist == 10


def test_shortlists_scanned_in_pieces_under_a_progress_display_are_the_same(capsys):
    train, _ = make_train_test(300, 10, 300, 600, seed=4, avg_nnz=12, avg_labels=2)
    net = slide.Network(300, 600, hidden=(16,), mode="batch", threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=64, progress=False)
    whole = shortlists(net, train.X, 40)
    capsys.readouterr()
    np.testing.assert_array_equal(shortlists(net, train.X, 40, progress=True), whole)
    shown = capsys.readouterr().err  # not a terminal: whole lines, every tenth of the rows
    assert "the re-ranker's shortlists (the network's top 40): 100% (300/300 samples" in shown
    assert shown.count("\n") >= 5


def test_bad_arrays_are_refused_with_what_is_wrong():
    X, Y, candidates = _problem(n=20)
    indptr, rows, positive = label_points(candidates, Y, Y.shape[1])
    slots, bias = np.zeros((64, 2), np.float32), np.zeros((Y.shape[1], 2), np.float32)
    x = (X.indptr, X.indices, X.data, X.shape[1])

    def call(indptr=indptr, rows=rows, positive=positive, c=1.0, iterations=20, tolerance=0.1, threads=1):
        return reranker_dual_cd(*x, indptr, rows, positive, slots, bias, c, iterations, tolerance, 0, threads)

    with pytest.raises(ValueError, match="labels \\+ 1 = 7 offsets"):
        call(indptr=indptr[:-1])
    bad = indptr.copy()
    bad[2], bad[3] = bad[3], bad[2] - 1
    with pytest.raises(ValueError, match="decreases at label"):
        call(indptr=bad)
    with pytest.raises(ValueError, match="from 0 to the number of rows"):
        call(indptr=indptr + 1)
    with pytest.raises(ValueError, match="row 20 lies outside"):
        call(rows=np.where(np.arange(rows.size) == 0, 20, rows))
    with pytest.raises(ValueError, match="of one length"):
        call(positive=positive[:-1])
    with pytest.raises(ValueError, match="C must be positive"):
        call(c=0.0)
    with pytest.raises(ValueError, match="max_iterations"):
        call(iterations=0)
    with pytest.raises(ValueError, match="tolerance"):
        call(tolerance=float("nan"))
    with pytest.raises(ValueError, match="threads"):
        call(threads=0)
    assert not slots.any() and not bias.any()  # refused before anything was written
