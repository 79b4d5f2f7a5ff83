"""The re-ranker's C, picked on held-out points: the alternative the training lists call for, the
solver's checks of C and of prepared points, and the comparison that keeps the better re-ranker."""

import copy
import json

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide.datasets import make_train_test
from slide.neighbours import pick_weights
from slide.prediction import reranker_training
from slide.prediction.fused import VotedNetwork
from slide.prediction.weight_grid import neighbourhood_means
from slide.reranker import (FEW_POINTS_PER_LABEL, HINGE_C, HINGE_C_BETWEEN, HINGE_C_FEW_POINTS, HINGE_C_MANY_POINTS,
                            HINGE_SHORTLIST_FACTOR, MANY_POINTS_PER_LABEL, MOST_POINTS_PER_LABEL, WEIGHTS, LabelPoints,
                            ShortlistReranker, hinge_cs)


def test_the_cs_compared_follow_the_points_per_label():
    assert HINGE_C_MANY_POINTS < HINGE_C_BETWEEN < HINGE_C < HINGE_C_FEW_POINTS
    # Delicious' and Corel5k's 1,100-1,300 compare two; debian-tags' 3,343 solves the smaller alone
    assert hinge_cs(1_200) == hinge_cs(MANY_POINTS_PER_LABEL) == hinge_cs(MOST_POINTS_PER_LABEL - 1) == \
        (HINGE_C, HINGE_C_MANY_POINTS)
    assert hinge_cs(3_343) == hinge_cs(MOST_POINTS_PER_LABEL) == (HINGE_C_MANY_POINTS,)
    assert hinge_cs(45) == hinge_cs(FEW_POINTS_PER_LABEL - 1) == (HINGE_C_FEW_POINTS,)
    # in between (debian-deps' 120) one solve, at C 0.5
    assert hinge_cs(120) == hinge_cs(FEW_POINTS_PER_LABEL) == hinge_cs(MANY_POINTS_PER_LABEL - 1) == \
        (HINGE_C_BETWEEN,)


def test_points_per_label_counts_only_the_labels_that_have_points():
    candidates = np.array([[0, 1], [1, -1], [1, 0]], np.int32)
    Y = sp.csr_matrix(np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]], np.float32))
    points = LabelPoints.of(candidates, Y, 4)
    # label 0: rows 0 and 2; label 1: rows 0, 1, 2; label 2: none; label 3: row 2 (its own)
    assert list(np.diff(points.indptr)) == [2, 3, 0, 1]
    assert points.per_label() == pytest.approx(6 / 3)
    assert LabelPoints.of(np.full((2, 1), -1, np.int32), sp.csr_matrix((2, 4)), 4).per_label() == 0.0


def _problem(seed=0, n=120, features=30, labels=12, width=6):
    rng = np.random.default_rng(seed)
    X = sp.random(n, features, density=0.2, format="csr", random_state=seed, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(n, np.float32), (np.arange(n), rng.integers(0, labels, n))), shape=(n, labels))
    candidates = np.array([rng.permutation(labels)[:width] for _ in range(n)], np.int32)
    return X, Y, candidates


@pytest.mark.parametrize("c", [0, -1.0, float("nan"), float("inf"), True, "1", None])
def test_fit_hinge_refuses_a_c_that_is_not_a_positive_number(c):
    X, Y, candidates = _problem()
    with pytest.raises(ValueError, match="c must be a positive number"):
        ShortlistReranker(30, 12, 3, bits=12, trained_on=6).fit_hinge(X, Y, candidates, c=c)


def test_prepared_points_solve_what_the_solver_computes_itself_and_are_checked():
    X, Y, candidates = _problem()
    alone, prepared = (ShortlistReranker(30, 12, 3, bits=12, trained_on=6) for _ in range(2))
    want = alone.fit_hinge(X, Y, candidates, c=4.0, seed=3)
    got = prepared.fit_hinge(X, Y, candidates, c=4.0, seed=3, points=LabelPoints.of(candidates, Y, 12))
    assert got == want and prepared.hinge_c == 4.0
    np.testing.assert_array_equal(prepared.slots, alone.slots)
    np.testing.assert_array_equal(prepared.bias, alone.bias)
    with pytest.raises(ValueError, match="points hold 11 labels' points, expected 12"):
        prepared.fit_hinge(X, Y, candidates, points=LabelPoints.of(candidates[:, :4] % 11, Y[:, :11], 11))
    with pytest.raises(ValueError, match="points name rows outside X's 60"):
        prepared.fit_hinge(X[:60], Y[:60], candidates[:60], points=LabelPoints.of(candidates, Y, 12))


@pytest.fixture(scope="module")
def fitted():
    """A network with a re-ranker and its validation points: (net, X, Y)."""
    train, test = make_train_test(1200, 300, 400, 900, seed=4, avg_nnz=12, avg_labels=2)
    net = slide.Network(400, 900, hidden=(16,), mode="batch", rerank=10, neighbours=0, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    return net, test.X, test.Y


def _scores(net, reranker, X, Y):
    """(the (vote, re-ranker) weights picked, every pair's score, the pick's judged score): each
    weight judged by the mean of its score and its neighbours' on the grid (`neighbourhood_means`),
    the smaller on ties."""
    composed = VotedNetwork(net, None, 0, reranker)
    _, scores = pick_weights(composed.fusion(X, 5, True)[0], Y, (1, 3, 5), "nDCG@5", (0.0,), WEIGHTS)
    judged = np.round(neighbourhood_means(np.array([scores[(0.0, w)] for w in WEIGHTS])), 12)
    best = int(np.argmax(judged))
    return (0.0, WEIGHTS[best]), scores, float(judged[best])


def test_the_comparison_keeps_the_first_on_a_tie_and_a_strictly_better_one(fitted):
    net, X, Y = fitted
    trained = net.reranker
    twin = copy.deepcopy(trained)
    kept, pair, scores, tree_weight, choice = VotedNetwork(net, None, 0, trained).best_weights(
        X, Y, (1, 3, 5), "nDCG@5", True, (0.0,), WEIGHTS, rerankers=[twin])
    assert kept is trained and tree_weight == 0.0  # no tree: its weight stays out of the pick
    assert choice is None  # nothing learned unless asked
    blank = ShortlistReranker(net.input_dim, net.output_dim, trained.shortlist, trained_on=trained.trained_on)
    _, _, blank_judged = _scores(net, blank, X, Y)
    trained_pair, trained_scores, trained_judged = _scores(net, trained, X, Y)
    assert trained_judged > blank_judged  # the trained one re-ranks better
    kept, pair, scores, _, _ = VotedNetwork(net, None, 0, blank).best_weights(X, Y, (1, 3, 5), "nDCG@5", True, (0.0,),
                                                                           WEIGHTS, rerankers=iter([trained]))
    assert kept is trained and (pair, scores) == (trained_pair, trained_scores)
    narrower = ShortlistReranker(net.input_dim, net.output_dim, trained.shortlist, trained_on=trained.shortlist)
    with pytest.raises(ValueError, match="must re-score the same lists"):
        VotedNetwork(net, None, 0, trained).best_weights(X, Y, (1, 3, 5), "nDCG@5", True, (0.0,), WEIGHTS,
                                                         rerankers=[narrower])


@pytest.mark.parametrize("hopeless", ["default", "alternative"])
def test_fit_keeps_the_c_that_fuses_better_on_the_held_out_points(monkeypatch, hopeless):
    """Whichever of the two C's is made hopeless (so small that every weight is about 0), fit keeps
    the other: the pick is made on the held-out points, not fixed."""
    tiny, good = 1e-7, 1.0
    default, alternative = (tiny, good) if hopeless == "default" else (good, tiny)
    monkeypatch.setattr(reranker_training, "hinge_cs", lambda points_per_label: (default, alternative))
    train, _ = make_train_test(1200, 300, 400, 900, seed=4, avg_nnz=12, avg_labels=2)
    net = slide.Network(400, 900, hidden=(16,), mode="batch", rerank=10, neighbours=0, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    assert net.reranker.hinge_c == good and net.rerank_weight > 0


@pytest.mark.parametrize("cs", [(HINGE_C,), (HINGE_C, HINGE_C_FEW_POINTS)])
def test_fit_solves_once_for_each_c_the_lists_call_for(monkeypatch, cs):
    solved = []
    real = reranker_training._solved
    monkeypatch.setattr(reranker_training, "hinge_cs", lambda points_per_label: cs)
    monkeypatch.setattr(reranker_training, "_solved", lambda *a: solved.append(a[-1]) or real(*a))
    train, _ = make_train_test(1200, 300, 400, 900, seed=4, avg_nnz=12, avg_labels=2)
    net = slide.Network(400, 900, hidden=(16,), mode="batch", rerank=10, neighbours=0, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=64, validation_split=0.1, progress=False)
    assert tuple(solved) == cs and net.reranker.hinge_c in cs


@pytest.mark.parametrize("cs", [None, (2.0, 0.5)])
def test_without_held_out_points_the_reranker_is_solved_at_the_first_c_its_lists_call_for(monkeypatch, cs):
    asked, real = [], reranker_training.hinge_cs
    monkeypatch.setattr(reranker_training, "hinge_cs",
                        lambda per_label: asked.append(per_label) or cs or real(per_label))
    train, _ = make_train_test(600, 100, 200, 300, seed=5, avg_nnz=10, avg_labels=2)
    net = slide.Network(200, 300, hidden=(16,), mode="batch", rerank=5, neighbours=0, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=64, progress=False)
    lists = reranker_training.shortlists(net, train.X, HINGE_SHORTLIST_FACTOR * 5)
    assert asked == [pytest.approx(LabelPoints.of(lists, train.Y, 300).per_label())]
    assert net.reranker.hinge_c == (cs or real(asked[0]))[0]


def test_a_run_records_and_prints_the_c_it_picked(tmp_path, capsys):
    from slide.cli import main
    from slide.datasets import write_xc
    from slide.runs import read_metrics

    train, test = make_train_test(900, 200, 300, 400, seed=6, avg_nnz=12, avg_labels=2)
    write_xc(tmp_path / "train.txt", train.X, train.Y)
    write_xc(tmp_path / "test.txt", test.X, test.Y)
    code = main(["train", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                 "--epochs", "1", "--out", str(tmp_path / "run"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    final = [r for r in read_metrics(tmp_path / "run") if r["kind"] == "final"][-1]
    assert final["rerank_c"] in (HINGE_C, HINGE_C_MANY_POINTS, HINGE_C_FEW_POINTS, HINGE_C_BETWEEN)
    picked = "(learned on validation" if final["fusion_weights_kept"] == "learned" else "(the best on validation"
    assert f"weight {final['rerank_weight']:g}, C {final['rerank_c']:g} {picked}" in out
    assert json.loads((tmp_path / "run" / "config.json").read_text())["network"]["rerank"] > 0


def test_fit_reranker_solves_at_the_c_it_is_given(fitted, monkeypatch):
    net, X, Y = fitted
    net = copy.deepcopy(net)
    net.fit_reranker(X, Y, c=4.0)
    at_four = net.reranker.slots[:, 0].copy()
    assert net.reranker.hinge_c == 4.0
    monkeypatch.setattr(reranker_training, "hinge_cs", lambda per_label: (0.5, 4.0))
    net.fit_reranker(X, Y)  # without a C: the first the lists call for
    assert net.reranker.hinge_c == 0.5 and not np.array_equal(net.reranker.slots[:, 0], at_four)
    for c in (0, -2.0, float("nan"), "4"):
        with pytest.raises(ValueError, match="c must be a positive number"):
            net.fit_reranker(X, Y, c=c)
