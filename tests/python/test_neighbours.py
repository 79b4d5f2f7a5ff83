"""The nearest-neighbour vote (slide.neighbours) against brute force, and its life in a Network:
fit, partial_fit, the weight picked on validation, save/load, and its settings."""

import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._inputs import as_features
from slide.datasets import make_catalogue
from slide.datasets.synthetic import split_at, unit_rows
from slide.model_file import ModelFileError, read_arrays, read_header, write_model
from slide._core import dense_neighbour_votes
from slide.neighbours import WEIGHTS, NeighbourMemory
from slide.prediction.weight_grid import neighbourhood_means


@pytest.fixture(scope="module")
def problem():
    return split_at(make_catalogue(1400, 600, 800, seed=3), 1200)


@pytest.fixture(scope="module")
def trained(problem):
    train, _ = problem
    net = slide.Network(600, 800, hidden=32, neighbours=10, threads=1, seed=0)
    history = net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    return net, history


def _unit(A):
    A = np.asarray(A, np.float64)
    return A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-30)


def _brute_nearest_votes(points, queries, train_Y, k):
    """Each query's k most cosine-similar points (ties to the lower point) vote with their similarity."""
    S = _unit(queries) @ _unit(points).T
    V = np.zeros((queries.shape[0], train_Y.shape[1]))
    for i in range(queries.shape[0]):
        near = np.argsort(-S[i], kind="stable")[:k]
        V[i] = np.maximum(S[i, near], 0) @ train_Y[near].toarray() / k
    return V


def brute_votes(train_X, train_Y, X, k):
    return _brute_nearest_votes(train_X.toarray(), X.toarray(), train_Y, k)


def brute_hidden_votes(net, train_X, train_Y, X, k):
    """The vote in the network's top hidden layer: the cosine of the activations of unit rows."""
    return _brute_nearest_votes(net.transform(unit_rows(train_X)), net.transform(unit_rows(X)), train_Y, k)


def brute_space_votes(net, X):
    """The vote of `net`'s memory in its neighbour_space."""
    m, k = net.memory, min(net.neighbours, len(net.memory))
    inputs = brute_votes(m.points, m.labels, X, k)
    hidden = brute_hidden_votes(net, m.points, m.labels, X, k)
    return {"input": inputs, "hidden": hidden, "both": (inputs + hidden) / 2}[net.neighbour_space]


def brute_fused(net, X):
    W = net.weights()
    logits = net.transform(X) @ W["layers.0.weight"].T + W["layers.0.bias"]
    return logits + net.neighbour_weight * brute_space_votes(net, X)


def test_votes_equal_brute_force(problem):
    train, test = problem
    memory = NeighbourMemory(train.X, train.Y)
    for k in (1, 5, 10):
        got = memory.votes(test.X, k).toarray()
        np.testing.assert_allclose(got, brute_votes(train.X, train.Y, test.X, k), atol=1e-5)


def test_votes_are_the_same_on_any_number_of_threads(problem):
    train, test = problem
    assert test.X.shape[0] > 3 * 32  # more queries than the engine hands each thread at once
    memory = NeighbourMemory(train.X, train.Y)
    one, three = memory.votes(test.X, 10, threads=1), memory.votes(test.X, 10, threads=3)
    assert one.shape == three.shape and (one != three).nnz == 0
    np.testing.assert_allclose(three.toarray(), brute_votes(train.X, train.Y, test.X, 10), atol=1e-5)


def test_tied_neighbours_are_taken_in_point_order():
    # Points 0-3 are the same vector, so a query along it ties them all; k=2 takes points 0 and 1.
    X = sp.csr_matrix(np.array([[1, 0], [1, 0], [1, 0], [1, 0], [0, 1]], np.float32))
    Y = sp.csr_matrix(np.eye(5, dtype=np.float32))
    votes = NeighbourMemory(X, Y).votes(sp.csr_matrix(np.array([[2, 0]], np.float32)), 2).toarray()
    np.testing.assert_array_equal(votes, [[0.5, 0.5, 0, 0, 0]])


def test_only_positive_similarities_vote():
    X = sp.csr_matrix(np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0]], np.float32))
    Y = sp.csr_matrix(np.eye(3, dtype=np.float32))
    queries = sp.csr_matrix(np.array([[1, 0, 0], [0, 0, 1]], np.float32))  # the second shares no feature
    votes = NeighbourMemory(X, Y).votes(queries, 3)
    np.testing.assert_allclose(votes.toarray(), [[1 / 3, 0, 0], [0, 0, 0]])
    assert votes.nnz == 1


def test_the_engine_refuses_inconsistent_arrays():
    from slide import _core

    def call(**bad):
        a = dict(q_indptr=np.array([0, 1], np.int64), q_indices=np.array([0], np.int32),
                 q_data=np.array([1.0], np.float32), f_indptr=np.array([0, 1, 1], np.int64),
                 f_indices=np.array([0], np.int32), f_data=np.array([1.0], np.float32),
                 l_indptr=np.array([0, 1], np.int64), l_indices=np.array([0], np.int32), n_features=2,
                 n_labels=1, k=1, threads=1)
        return _core.neighbour_votes(**{**a, **bad})

    indptr, labels, votes = call()
    assert list(indptr) == [0, 1] and list(labels) == [0] and list(votes) == [1.0]
    with pytest.raises(ValueError, match="feature id 2"):
        call(q_indices=np.array([2], np.int32))
    with pytest.raises(ValueError, match="feature id 1"):  # a point id past the labelled points
        call(f_indices=np.array([1], np.int32))
    with pytest.raises(ValueError, match="label 1"):
        call(l_indices=np.array([1], np.int32))
    with pytest.raises(ValueError, match="feature rows"):
        call(n_features=3)
    with pytest.raises(ValueError, match="k must be"):
        call(k=0)


def test_votes_with_k_above_the_memory_use_every_point(problem):
    train, test = problem
    memory = NeighbourMemory(train.X[:3], train.Y[:3])
    np.testing.assert_allclose(memory.votes(test.X[:4], 10).toarray(),
                               brute_votes(train.X[:3], train.Y[:3], test.X[:4], 3), atol=1e-5)


@pytest.mark.parametrize("space", ["hidden", "both"])
def test_votes_in_the_hidden_space_equal_brute_force(problem, trained, space):
    train, test = problem
    net, _ = trained
    memory = NeighbourMemory(train.X, train.Y)
    assert test.X.shape[0] > 128  # more queries than the engine's search takes at once
    inputs = brute_votes(train.X, train.Y, test.X, 10)
    for k in (1, 5, 10):
        got = memory.votes(test.X, k, space=space, representation=net.representation).toarray()
        hidden = brute_hidden_votes(net, train.X, train.Y, test.X, k)
        want = hidden if space == "hidden" else (brute_votes(train.X, train.Y, test.X, k) + hidden) / 2
        np.testing.assert_allclose(got, want, atol=1e-5)
    assert not np.allclose(hidden, inputs, atol=1e-3)  # the two spaces vote differently here


def test_the_hidden_space_search_is_the_same_on_any_number_of_threads(problem, trained):
    train, test = problem
    net, _ = trained
    memory = NeighbourMemory(train.X, train.Y)
    one = memory.votes(test.X, 10, threads=1, space="hidden", representation=net.representation)
    three = memory.votes(test.X, 10, threads=3, space="hidden", representation=net.representation)
    assert (one != three).nnz == 0


def test_the_points_activations_are_computed_again_once_the_network_trains(problem):
    train, test = problem
    net = slide.Network(600, 800, hidden=16, threads=1, seed=0)
    net.partial_fit(train.X[:600], train.Y[:600])
    memory = NeighbourMemory(train.X, train.Y)
    before = memory.votes(test.X, 5, space="hidden", representation=net.representation).toarray()
    net.partial_fit(train.X[600:], train.Y[600:])
    after = memory.votes(test.X, 5, space="hidden", representation=net.representation).toarray()
    np.testing.assert_allclose(after, brute_hidden_votes(net, train.X, train.Y, test.X, 5), atol=1e-5)
    assert not np.allclose(after, before, atol=1e-4)


def test_the_points_activations_follow_parameters_put_back_without_training(problem):
    from slide.early_stopping import restore, snapshot
    train, test = problem
    net = slide.Network(600, 800, hidden=16, threads=1, seed=0)
    net.partial_fit(train.X[:600], train.Y[:600])
    early = snapshot(net)
    net.partial_fit(train.X[600:], train.Y[600:])
    memory = NeighbourMemory(train.X, train.Y)
    late = memory.votes(test.X, 5, space="hidden", representation=net.representation).toarray()
    restore(net, early)  # as a best epoch or an epoch mean is put back: no step taken
    back = memory.votes(test.X, 5, space="hidden", representation=net.representation).toarray()
    np.testing.assert_allclose(back, brute_hidden_votes(net, train.X, train.Y, test.X, 5), atol=1e-5)
    assert not np.allclose(back, late, atol=1e-4)


def test_the_hidden_space_needs_a_representation(problem):
    train, test = problem
    memory = NeighbourMemory(train.X, train.Y)
    with pytest.raises(ValueError, match="needs the network's representation"):
        memory.votes(test.X, 3, space="hidden")
    with pytest.raises(ValueError, match="space must be one of input, hidden, both"):
        memory.votes(test.X, 3, space="output")


def test_the_dense_search_refuses_arrays_that_do_not_fit():
    points, queries = np.eye(2, 3, dtype=np.float32), np.ones((1, 3), np.float32)
    l_indptr, l_indices = np.array([0, 1, 2], np.int64), np.array([0, 1], np.int32)

    def call(**change):
        a = dict(queries=queries, points=points, l_indptr=l_indptr, l_indices=l_indices, n_labels=2, k=1, threads=1)
        a.update(change)
        return dense_neighbour_votes(**a)
    indptr, labels, votes = call()
    assert list(indptr) == [0, 1] and list(labels) == [0] and votes[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="as wide as the points"):
        call(queries=np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="3 rows for 2 points"):
        call(l_indptr=np.array([0, 1, 2, 2], np.int64))
    with pytest.raises(ValueError, match="label 1"):
        call(n_labels=1)
    with pytest.raises(ValueError, match="k must be"):
        call(k=0)
    assert list(call(queries=-np.ones((1, 3), np.float32))[0]) == [0, 0]  # no positive similarity: no vote


def _picked_with_its_neighbours(scores: dict) -> float:
    """The weight fit picks from each weight's validation score: each is judged by the mean of its
    score and its neighbours' on the grid (`neighbourhood_means`, tested against brute force in
    test_label_tree), and the best judged is picked, the smaller on ties."""
    ordered = sorted(scores)
    judged = np.round(neighbourhood_means(np.array([scores[w] for w in ordered])), 12)
    return ordered[int(np.argmax(judged))]


def test_fit_remembers_the_points_it_trained_on_and_picks_the_weight_on_validation(problem, trained):
    train, _ = problem
    net, history = trained
    assert len(net.memory) == len(train) - 120  # the held-out validation points do not vote
    assert set(history.neighbour_weight_scores) == set(WEIGHTS)
    assert net.neighbour_weight == _picked_with_its_neighbours(history.neighbour_weight_scores)


def test_fused_prediction_is_the_exact_top_k_of_logit_plus_weighted_vote(problem, trained):
    _, test = problem
    net, _ = trained
    assert net.neighbour_weight > 0
    F = brute_fused(net, test.X)
    ids, scores = net.predict(test.X, k=5)
    np.testing.assert_allclose(scores, np.take_along_axis(F, ids.astype(np.int64), 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(scores, -np.sort(-F, axis=1)[:, :5], rtol=1e-4, atol=1e-4)


def test_fused_probabilities_are_normalised_over_every_output(problem, trained):
    _, test = problem
    net, _ = trained
    picked = net.neighbour_weight
    try:
        for weight in (picked, 8.0):
            net.neighbour_weight = weight
            F = brute_fused(net, test.X[:40])
            P = np.exp(F - F.max(axis=1, keepdims=True))
            P /= P.sum(axis=1, keepdims=True)
            ids, p = net.predict_proba(test.X[:40], k=5)
            np.testing.assert_array_equal(ids, net.predict(test.X[:40], k=5)[0])
            # The fused scores are float32: a probability from scores of magnitude M is exact to
            # about float32's epsilon times M (at weight 1,024, M is about 440).
            atol = 1e-5 + 4 * np.finfo(np.float32).eps * np.abs(F).max()
            np.testing.assert_allclose(p, np.take_along_axis(P, ids.astype(np.int64), 1), atol=atol, err_msg=weight)
    finally:
        net.neighbour_weight = picked


def test_use_neighbours_false_is_the_network_alone(problem, trained):
    _, test = problem
    net, _ = trained
    X = as_features(test.X, 600)
    alone = net._core.predict(X.indptr, X.indices, X.data, 5, True)
    got = net.predict(test.X, k=5, use_neighbours=False)
    np.testing.assert_array_equal(got[0], alone[0])
    np.testing.assert_array_equal(got[1], alone[1])


def test_neighbours_zero_keeps_no_memory(problem):
    train, test = problem
    net = slide.Network(600, 800, hidden=16, neighbours=0, threads=1, seed=0)
    net.fit(train.X, train.Y, epochs=1, progress=False)
    assert net.memory is None
    np.testing.assert_array_equal(net.predict(test.X, k=3)[0], net.predict(test.X, k=3, use_neighbours=False)[0])


def test_partial_fit_adds_each_piece_to_the_memory(problem):
    train, _ = problem
    net = slide.Network(600, 800, hidden=16, neighbours=10, threads=1, seed=0)
    net.partial_fit(train.X[:500], train.Y[:500]).partial_fit(train.X[500:], train.Y[500:])
    assert len(net.memory) == len(train)
    whole = NeighbourMemory(train.X, train.Y)
    assert (net.memory.points != whole.points).nnz == 0
    assert (net.memory.labels != whole.labels).nnz == 0


def test_save_and_load_keep_the_memory_and_the_weight(problem, trained, tmp_path):
    _, test = problem
    net, _ = trained
    net.save(tmp_path / "m.npz")
    loaded = slide.Network.load(tmp_path / "m.npz")
    assert loaded.neighbour_weight == net.neighbour_weight and loaded.neighbours == net.neighbours
    for a, b in zip(net.predict(test.X, k=5), loaded.predict(test.X, k=5)):
        np.testing.assert_array_equal(a, b)


def test_a_model_file_from_before_neighbour_space_votes_in_the_input_space(trained, tmp_path):
    net, _ = trained
    assert net.neighbour_space == "both"
    net.save(tmp_path / "m.npz")
    header, arrays = read_header(tmp_path / "m.npz"), read_arrays(tmp_path / "m.npz")
    header.pop("checksums")
    del header["config"]["neighbour_space"]
    write_model(tmp_path / "old.npz", header, arrays)
    assert slide.Network.load(tmp_path / "old.npz").neighbour_space == "input"


def test_a_damaged_memory_is_refused(problem, trained, tmp_path):
    net, _ = trained
    net.save(tmp_path / "m.npz")
    with zipfile.ZipFile(tmp_path / "m.npz") as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    name = "neighbours.points.data.npy"
    raw = bytearray(members[name])
    raw[-3] ^= 0xFF
    members[name] = bytes(raw)
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    with pytest.raises(ModelFileError, match="neighbours.points.data.*checksum"):
        slide.Network.load(tmp_path / "bad.npz")


def test_tune_without_memory_is_a_clear_error(problem):
    _, test = problem
    net = slide.Network(600, 800, hidden=8, neighbours=10, threads=1)
    with pytest.raises(ValueError, match="needs neighbours > 0 and a memory"):
        net.tune_neighbour_weight(test.X, test.Y)


@pytest.mark.parametrize("kwargs, match", [
    (dict(neighbours=-1), "neighbours"), (dict(neighbours=2.5), "neighbours"),
    (dict(neighbour_weight=-1.0), "neighbour_weight"), (dict(neighbour_weight=float("nan")), "neighbour_weight"),
    (dict(neighbour_space="output"), "neighbour_space")])
def test_settings_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        slide.Network(10, 10, **kwargs)


def test_remember_checks_its_input(problem):
    train, _ = problem
    net = slide.Network(600, 800, hidden=8, threads=1)
    with pytest.raises(ValueError):
        net.remember(train.X[:10], sp.csr_matrix((9, 800)))


def test_tune_refuses_an_unknown_mode(problem, trained):
    _, test = problem
    net, _ = trained
    with pytest.raises(ValueError, match="mode must be 'dense' or 'sparse'"):
        net.tune_neighbour_weight(test.X, test.Y, mode="exact")


def _lexsort_top(fusion, weight, k, rerank_weight):
    """The ranking `Fusion.top` must give: every candidate sorted by (query, -score), ties in
    candidate order (the network's before the voted)."""
    score = fusion.logits + (np.float32(weight) * fusion.vote + np.float32(rerank_weight) * fusion.rerank)
    order = np.lexsort((-score, fusion.rows))
    ids = np.full((fusion.n, k), -1, np.int32)
    scores = np.full((fusion.n, k), -np.inf, np.float32)
    for r in range(fusion.n):
        mine = order[fusion.rows[order] == r][:k]
        ids[r, :len(mine)], scores[r, :len(mine)] = fusion.ids[mine], score[mine]
    return ids, scores


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fusion_top_ranks_like_sorting_every_candidate(seed):
    from slide.neighbours import Fusion

    rng = np.random.default_rng(seed)
    n, k, labels = 30, 6, 40
    ids = rng.integers(0, labels, (n, k)).astype(np.int32)
    ids[rng.random((n, k)) < 0.2] = -1  # queries with fewer candidates than k
    ids[3] = -1  # and one with none from the network
    logits = np.round(rng.normal(size=(n, k)), 1).astype(np.float32)  # rounded: ties
    votes = sp.random(n, labels, density=0.08, format="csr", random_state=seed, dtype=np.float32)
    votes.data = np.round(votes.data, 1)
    logits_of = lambda rows, labels: np.round(rng.normal(size=len(rows)), 1).astype(np.float32)  # noqa: E731
    rerank_of = lambda rows, labels: np.round(rng.normal(size=len(rows)), 1).astype(np.float32)  # noqa: E731
    fusion = Fusion(ids, logits, votes, logits_of, rerank_of)
    _assert_every_way_ranks_like_the_oracle(fusion)


def _assert_every_way_ranks_like_the_oracle(fusion):
    """`top` (the engine's one pass) against `_lexsort_top`, ids and scores bit for bit."""
    for weight, rerank_weight, top_k in [(0.0, 0.0, 6), (0.5, 0.0, 3), (1.0, 2.0, 10), (0.0, 4.0, 1), (0.3, 0.7, 5)]:
        want_ids, want_scores = _lexsort_top(fusion, weight, top_k, rerank_weight)
        got_ids, got_scores = fusion.top(weight, top_k, rerank_weight)
        np.testing.assert_array_equal(got_ids, want_ids)
        np.testing.assert_array_equal(got_scores, want_scores)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weights_are_scored_as_every_query_would_score_them(seed):
    """`pick_weights` ranks only the queries with one of their labels among their candidates; each
    weight pair must score exactly what the whole report over every query gives, whatever the
    queries without one (none from the network, no labels, only an explicit zero) hold."""
    from slide.metrics import ranking_report
    from slide.neighbours import Fusion, pick_weights

    rng = np.random.default_rng(seed)
    n, k, labels = 40, 6, 30
    ids = rng.integers(0, labels, (n, k)).astype(np.int32)
    ids[rng.random((n, k)) < 0.2] = -1
    ids[3] = -1
    logits = np.round(rng.normal(size=(n, k)), 1).astype(np.float32)
    votes = sp.random(n, labels, density=0.1, format="csr", random_state=seed, dtype=np.float32)
    scores_of = lambda rows, labels: np.round(rng.normal(size=len(rows)), 1).astype(np.float32)  # noqa: E731
    fusion = Fusion(ids, logits, votes, scores_of, scores_of, scores_of)
    truth = sp.random(n, labels, density=0.06, format="lil", random_state=seed + 10, dtype=np.float32)
    truth[5, :] = 0
    truth[6, :] = 0
    truth[6, int(fusion.ids[fusion.rows == 6][0]) if (fusion.rows == 6).any() else 0] = 0.0
    truth = sp.csr_matrix(truth)
    truth.data[:2] = 0.0  # explicit zeros are not labels
    ks, weights, rerank_weights = (1, 3, 5), (0.0, 0.5, 2.0), (0.0, 1.0)
    cut, _, _, _ = fusion.queries_that_can_score(truth)
    assert 0 < cut.n < n, "the case must have queries to leave out and queries to keep"
    for tree_weight in (0.0, 1.5):
        for monitor in ("P@1", "P@3", "nDCG@5"):
            best, scores = pick_weights(fusion, truth, ks, monitor, weights, rerank_weights, tree_weight=tree_weight)
            want = {(w, rw): ranking_report(fusion.top(w, 5, rw, tree_weight)[0], truth, ks)[monitor]
                    for w in weights for rw in rerank_weights}
            assert scores.keys() == want.keys()
            np.testing.assert_allclose([scores[p] for p in want], list(want.values()), rtol=1e-12, atol=1e-15)
            assert best == max(want, key=lambda pair: (want[pair], -pair[0], -pair[1]))


def test_weights_over_queries_without_a_label_among_their_candidates_all_score_0():
    from slide.neighbours import Fusion, pick_weights

    ids = np.array([[0, 1], [2, -1]], np.int32)
    fusion = Fusion(ids, np.ones((2, 2), np.float32), sp.csr_matrix((2, 4), dtype=np.float32), None)
    truth = sp.csr_matrix(([1.0], ([0], [3])), shape=(2, 4))
    best, scores = pick_weights(fusion, truth, (1, 3), "nDCG@3", (0.0, 1.0), (0.0,))
    assert best == (0.0, 0.0) and scores == {(0.0, 0.0): 0.0, (1.0, 0.0): 0.0}


def test_a_query_with_fewer_candidates_than_k_scores_no_hit_past_them():
    from slide.neighbours import Fusion, pick_weights

    ids = np.array([[0, 1], [2, -1]], np.int32)  # the first candidate is a label; the second query has one
    fusion = Fusion(ids, np.ones((2, 2), np.float32), sp.csr_matrix((2, 4), dtype=np.float32), None)
    truth = sp.csr_matrix(([1.0, 1.0], ([0, 1], [0, 2])), shape=(2, 4))
    assert pick_weights(fusion, truth, (3,), "P@3", (0.0,), (0.0,))[1] == {(0.0, 0.0): pytest.approx(1 / 3)}


def test_one_query_voted_for_thousands_of_labels_ranks_the_same():
    """debian-rdeps: one test query's neighbours voted for 23,489 labels, where most queries have
    a few dozen candidates."""
    from slide.neighbours import Fusion

    rng = np.random.default_rng(5)
    n, k, labels = 40, 5, 5000
    ids = rng.integers(0, labels, (n, k)).astype(np.int32)
    logits = np.round(rng.normal(size=(n, k)), 1).astype(np.float32)
    dense = np.zeros((n, labels), np.float32)
    dense[7] = np.round(rng.random(labels), 1) + 0.1  # query 7 is voted for every label
    dense[rng.integers(0, n, 60), rng.integers(0, labels, 60)] = 0.5
    votes = sp.csr_matrix(dense)
    scores_of = lambda rows, labels: np.round(rng.normal(size=len(rows)), 1).astype(np.float32)  # noqa: E731
    fusion = Fusion(ids, logits, votes, scores_of, scores_of)
    _assert_every_way_ranks_like_the_oracle(fusion)


def test_fused_top_k_ranks_nan_last_and_pads_short_queries():
    """NaN below every number (-inf included), ties to the earlier candidate, -1 / -inf padding,
    and candidates that lie outside the arrays refused by name."""
    from slide._core import fused_top_k

    logits = np.array([np.nan, 1.0, -np.inf, 1.0, 2.0], np.float32)
    zeros = np.zeros(5, np.float32)
    ids = np.array([10, 11, 12, 13, 14], np.int32)
    starts, counts = np.array([0, 4], np.int64), np.array([4, 1], np.int64)
    got_ids, got_scores = fused_top_k(starts, counts, ids, logits, zeros, zeros, 1.0, 1.0, 5)
    assert got_ids.tolist() == [[11, 13, 12, 10, -1], [14, -1, -1, -1, -1]]
    assert got_scores[0, :3].tolist() == [1.0, 1.0, -np.inf] and np.isnan(got_scores[0, 3])
    assert got_scores[1, 1:].tolist() == [-np.inf] * 4
    assert fused_top_k(starts, counts, ids, logits, zeros, zeros, 1.0, 1.0, 2)[0].tolist() == [[11, 13], [14, -1]]
    with pytest.raises(ValueError, match=r"query 1's candidates \[4, \+2\) lie outside the 5"):
        fused_top_k(starts, np.array([4, 2], np.int64), ids, logits, zeros, zeros, 1.0, 1.0, 2)


@pytest.mark.parametrize("monitor", ["P@1", "loss"])
def test_the_fusion_weight_is_picked_by_ndcg_at_5_whatever_picks_the_epoch(problem, monitor):
    from slide.metrics import ranking_report

    train, _ = problem
    X, Y, Xv, Yv = train.X[:1080], train.Y[:1080], train.X[1080:], train.Y[1080:]
    net = slide.Network(600, 800, hidden=32, neighbours=10, threads=1, seed=0)
    history = net.fit(X, Y, epochs=2, batch_size=64, validation_data=(Xv, Yv), monitor=monitor, progress=False)
    assert set(history.neighbour_weight_scores) == set(WEIGHTS)
    picked = net.neighbour_weight
    for weight, score in history.neighbour_weight_scores.items():
        net.neighbour_weight = weight
        ids, _ = net.predict(Xv, k=5)
        assert ranking_report(ids, Yv, (1, 3, 5))["nDCG@5"] == pytest.approx(score, abs=1e-6), weight
    assert picked == _picked_with_its_neighbours(history.neighbour_weight_scores)


def test_the_fusion_monitor_is_ndcg_at_the_deepest_rank_up_to_5():
    from slide.prediction.methods import FUSION_MONITOR, fusion_monitor

    assert fusion_monitor((1, 3, 5)) == FUSION_MONITOR == "nDCG@5"
    assert fusion_monitor((1, 3)) == "nDCG@3" and fusion_monitor((1,)) == "nDCG@1"
