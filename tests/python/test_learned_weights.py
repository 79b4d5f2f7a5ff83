"""The fusion's weights learned by logistic regression (slide.prediction.learned_weights), and the
rule that keeps them or the grid's pick for a run."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import slide
from slide.datasets import make_train_test
from slide.prediction.learned_weights import LOGIT_FLOOR, learned_or_grid, learned_weights, logistic_regression
from slide.neighbours import Fusion, point_scores
from slide.prediction.weight_grid import grid_pick, pick_on_grid


def _objective(F, y, c, offset):
    def value(beta):
        z = F @ beta[:-1] + beta[-1] + offset
        return 0.5 * beta[:-1] @ beta[:-1] + c * np.sum(np.logaddexp(0.0, z) - y * z)
    return value


@pytest.mark.parametrize("c", [0.1, 1.0])
def test_the_regression_is_scikit_learns(c):
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    F = rng.normal(size=(3000, 4))
    y = (F @ [1.0, -2.0, 0.5, 0.0] + rng.normal(size=3000) > 1).astype(float)
    coef, intercept = logistic_regression(F, y, c)
    theirs = sklearn.LogisticRegression(C=c, tol=1e-12, max_iter=10_000).fit(F, y)
    np.testing.assert_allclose(coef, theirs.coef_[0], rtol=1e-5, atol=1e-7)
    assert intercept == pytest.approx(theirs.intercept_[0], rel=1e-5)


def test_the_regression_with_an_offset_is_the_objectives_minimum():
    rng = np.random.default_rng(1)
    F = rng.normal(size=(2000, 2))
    offset = 0.7 * rng.normal(size=2000)
    y = (F @ [0.5, 1.5] + offset + rng.logistic(size=2000) > 0).astype(float)
    coef, intercept = logistic_regression(F, y, 1.0, offset=offset)
    value = _objective(F, y, 1.0, offset)
    reference = minimize(value, np.zeros(3), method="BFGS", options={"gtol": 1e-9}).x
    np.testing.assert_allclose(np.append(coef, intercept), reference, atol=1e-4)
    assert value(np.append(coef, intercept)) <= value(reference) + 1e-9


def test_a_label_set_of_one_class_gives_finite_coefficients():
    F = np.random.default_rng(2).normal(size=(50, 2))
    for y in (np.zeros(50), np.ones(50)):
        coef, intercept = logistic_regression(F, y)
        assert np.all(np.isfinite(coef)) and np.isfinite(intercept)


def _fusion(n=400, k=8, seed=0, vote=3.0, rerank=2.0, tree=0.5, logit=1.0, logits_vary=True,
            one_logit_a_query=False):
    """A Fusion of n queries with k candidates each, scores drawn at random, and the labels
    (one a query at most) drawn from softmax(logit x logit + vote x vote + ...) over its candidates."""
    rng = np.random.default_rng(seed)
    ids = np.tile(np.arange(k, dtype=np.int32), (n, 1))
    logits = rng.normal(size=(n, 1 if one_logit_a_query else k)).astype(np.float32) * np.ones((n, k), np.float32)
    logits = logits if logits_vary else np.zeros((n, k), np.float32)
    parts = {name: rng.normal(size=(n, k)).astype(np.float32) for name in ("vote", "rerank", "tree")}
    votes = sp.csr_matrix(np.abs(parts["vote"]))
    score = logit * logits + vote * np.abs(parts["vote"]) + rerank * parts["rerank"] + tree * parts["tree"]
    p = np.exp(score - score.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    truth = np.array([rng.choice(k, p=row) for row in p])
    Y = sp.csr_matrix((np.ones(n, np.float32), (np.arange(n), truth)), shape=(n, k))
    fusion = Fusion(ids, logits, votes, lambda rows, labels: logits[rows, labels],
                    lambda rows, labels: parts["rerank"][rows, labels], lambda rows, labels: parts["tree"][rows, labels])
    relevant = np.asarray(Y[fusion.rows, fusion.ids]).ravel() > 0
    return fusion, Y, relevant


def test_the_weights_learned_are_each_parts_coefficient_over_the_logits():
    fusion, _, relevant = _fusion(n=6000, k=6)
    vote, rerank, tree = learned_weights(fusion, relevant, (True, True, True))
    # One draw per query out of six softmax over the candidates: the regression's odds follow the
    # same score, so its coefficients' ratios come close to the true ones.
    assert vote == pytest.approx(3.0, rel=0.2) and rerank == pytest.approx(2.0, rel=0.2)
    assert tree == pytest.approx(0.5, rel=0.3)


def test_parts_left_out_get_no_weight_and_a_part_that_hurts_gets_0():
    fusion, _, relevant = _fusion(n=3000, tree=-1.0)
    assert learned_weights(fusion, relevant, (True, False, False))[1:] == (0.0, 0.0)
    assert learned_weights(fusion, relevant, (True, True, True))[2] == 0.0  # the settings allow no less


def test_a_logit_that_does_not_rank_is_held_at_the_floor():
    fusion, _, relevant = _fusion(n=3000, logit=-0.5)
    weights = learned_weights(fusion, relevant, (True, True, True))
    # The logit's standardised coefficient sits at the floor, and the others are their own fit beside it.
    F = np.column_stack([fusion.logits, fusion.vote, fusion.rerank, fusion.tree]).astype(np.float64)
    Z = (F - F.mean(axis=0)) / F.std(axis=0)
    assert logistic_regression(Z, relevant)[0][0] < LOGIT_FLOOR
    others = logistic_regression(Z[:, 1:], relevant, offset=LOGIT_FLOOR * Z[:, 0])[0] / F.std(axis=0)[1:]
    np.testing.assert_allclose(weights, np.maximum(others / (LOGIT_FLOOR / F.std(axis=0)[0]), 0.0), rtol=1e-9)
    assert all(w > 0 for w in weights[:2])


def test_no_candidates_or_equal_logits_learn_nothing():
    fusion, _, relevant = _fusion(logits_vary=False)
    assert learned_weights(fusion, relevant, (True, True, True)) is None
    empty = fusion.queries(np.zeros(fusion.n, bool))
    assert learned_weights(empty, relevant[:0], (True, True, True)) is None


GRID = ([0.0, 16.0], [0.0, 16.0], [0.0, 16.0])


def _choose(fusion, Y, grid=GRID, ks=(1, 3, 5), monitor="nDCG@5", seed=0):
    """learned_or_grid as best_weights calls it: the grid's pick on every point beside it."""
    per_point = point_scores(fusion, Y, ks, monitor, *grid)
    t, (w, r), _, _ = pick_on_grid(per_point.mean(axis=-1), grid)
    return learned_or_grid(fusion, Y, ks, monitor, grid, per_point, (w, r, t), seed)


def test_the_grids_pick_from_each_points_scores_is_grid_pick():
    fusion, Y, _ = _fusion(n=300)
    per_point = point_scores(fusion, Y, (1, 3, 5), "nDCG@5", *GRID)
    ours = pick_on_grid(per_point.mean(axis=-1), GRID)
    theirs = grid_pick(fusion, Y, (1, 3, 5), "nDCG@5", *GRID, None)
    assert ours[:2] == theirs[:2] and ours[3] == pytest.approx(theirs[3], abs=1e-12)
    assert ours[2] == pytest.approx(theirs[2], abs=1e-12)


def test_weights_the_grid_cannot_reach_are_learned_and_kept():
    fusion, Y, _ = _fusion(n=1500, vote=3.0, rerank=2.0, tree=0.5)
    (w, r, t), choice = _choose(fusion, Y)
    assert choice.learned and choice.learned_score > choice.grid_score
    assert (w, r, t) == learned_weights(fusion, fusion.labelled(Y)[0], (True, True, True))
    assert set(choice.grid) <= {0.0, 16.0}
    assert _choose(fusion, Y) == ((w, r, t), choice)  # the split is drawn from the seed


def test_the_grid_is_kept_when_the_regression_gives_nothing_or_does_no_better():
    fusion, Y, _ = _fusion(logits_vary=False)
    triple, choice = _choose(fusion, Y)
    assert triple == choice.grid and not choice.learned and choice.learned_score is None
    # Each query's candidates share one logit, so any vote weight above 0 ranks them as the grid's
    # 16 does (judged with its neighbours 8 and 32): a tie, and the grid stays.
    fusion, Y, _ = _fusion(n=600, logit=0.0, vote=5.0, rerank=0.0, tree=0.0, one_logit_a_query=True)
    triple, choice = _choose(fusion, Y, grid=([0.0, 8.0, 16.0, 32.0], [0.0], [0.0]))
    assert choice.learned_score == choice.grid_score and choice.grid == (16.0, 0.0, 0.0)
    assert triple == (16.0, 0.0, 0.0) and not choice.learned
    # With one weight a part, nothing is learned and nothing is chosen.
    assert _choose(fusion, Y, grid=([0.0], [1.0], [0.0]), ks=(1,), monitor="P@1") == ((0.0, 1.0, 0.0), None)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    train, test = make_train_test(900, 200, 300, 120, seed=3, avg_nnz=12, avg_labels=2)
    net = slide.Network(300, 120, hidden=(16,), mode="dense", neighbours=5, label_tree=8, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    path = tmp_path_factory.mktemp("learned") / "m.npz"
    net.save(path)
    return net, path, test


def test_fit_says_how_the_weights_were_chosen_and_the_file_keeps_them(fitted):
    net, path, test = fitted
    choice = net.weight_choice
    assert choice is not None and choice.learned_score is not None
    picked = (net.neighbour_weight, net.rerank_weight, net.tree_weight)
    assert choice.learned == (picked != choice.grid)
    again = slide.Network.load(path)
    assert (again.neighbour_weight, again.rerank_weight, again.tree_weight) == picked
    ids, _ = net.predict(test.X, k=5)
    np.testing.assert_array_equal(again.predict(test.X, k=5)[0], ids)


def test_tuning_the_vote_alone_learns_nothing(fitted):
    net, _, test = fitted
    net.tune_neighbour_weight(test.X, test.Y)
    assert net.weight_choice is None


def test_fusion_weights_grid_keeps_the_grids_pick_and_the_file_keeps_the_setting(tmp_path):
    from slide.prediction.methods import TREE_WEIGHTS
    train, _ = make_train_test(900, 200, 300, 120, seed=3, avg_nnz=12, avg_labels=2)
    net = slide.Network(300, 120, hidden=(16,), mode="dense", neighbours=5, label_tree=8, threads=2, seed=0,
                        fusion_weights="grid")
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    assert net.weight_choice is None and net.tree_weight in TREE_WEIGHTS
    net.save(tmp_path / "m.npz")
    assert slide.Network.load(tmp_path / "m.npz").fusion_weights == "grid"
    with pytest.raises(ValueError, match="fusion_weights must be one of auto, grid; got 'learned'"):
        slide.Network(300, 120, fusion_weights="learned")


def test_the_large_output_preset_keeps_the_grid_and_the_dense_one_chooses():
    from slide.shape_defaults import preset_for_shape
    assert preset_for_shape(20_000, 50_000, 40_000)[0]["fusion_weights"] == "grid"
    assert "fusion_weights" not in preset_for_shape(20_000, 600, 20_000)[0]  # the setting's default, auto
    assert slide.Network(10, 10).fusion_weights == "auto"
