"""The label tree (slide.label_tree, cpp/label_tree/): its classifiers are liblinear's squared
hinge on Parabel's points (scikit-learn's LinearSVC and a plain Python walk of the tree are the
oracles); its shape is one balanced tree over every label, the same at any thread count; beam
search equals the exact ranking when the beam holds every leaf; model files keep it, and a damaged
one is refused with what is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._core import sparse_dual_cd, sparse_pair_scores, tree_shape, tree_task_points
from slide.datasets import make_train_test
from slide.datasets.synthetic import unit_rows
from slide.label_tree import LabelForest, LabelTree, TreeShape
from slide.label_tree.clustering import build_shape, label_vectors
from slide.label_tree.node_points import task_points
from slide.label_tree.tree import log_probability
from slide.model_file import ModelFileError


def _problem(seed=0, n=300, features=60, labels=40):
    """Labels in four groups, each group's points drawing on its own quarter of the features."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 4, n)
    rows, cols = [], []
    for i in range(n):
        own = rng.choice(np.arange(group[i] * 15, group[i] * 15 + 15), 6, replace=False)
        rows += [i] * 8
        cols += list(own) + list(rng.choice(features, 2, replace=False))
    X = unit_rows(sp.csr_matrix((rng.random(len(rows)).astype(np.float32) + 0.1, (rows, cols)), shape=(n, features)))
    Y = sp.lil_matrix((n, labels), dtype=np.float32)
    for i in range(n):
        for label in rng.choice(np.arange(group[i] * 10, group[i] * 10 + 10), rng.integers(1, 4), replace=False):
            Y[i, label] = 1.0
    return X, sp.csr_matrix(Y)


def _task_points_by_walking(shape, Y):
    """The oracle: each task's rows by walking the tree in Python (Parabel's rule)."""
    Y = sp.csr_matrix(Y)
    n_labels = Y.shape[1]
    parent, leaf_of = shape.parents(), shape.leaf_of_label(n_labels)

    def reached(row):
        nodes = set()
        for label in Y.indices[Y.indptr[row]:Y.indptr[row + 1]]:
            node = leaf_of[label]
            while node >= 0:
                nodes.add(int(node))
                node = parent[node]
        return nodes

    tasks = [[] for _ in range(shape.nodes + n_labels)]
    for row in range(Y.shape[0]):
        nodes, own = reached(row), set(Y.indices[Y.indptr[row]:Y.indptr[row + 1]].tolist())
        for node in nodes:
            left, right = shape.children[node]
            if left >= 0:
                tasks[left].append((row, int(left in nodes)))
                tasks[right].append((row, int(right in nodes)))
            else:
                for label in shape.leaf_labels[shape.leaf_indptr[node]:shape.leaf_indptr[node + 1]]:
                    tasks[shape.nodes + label].append((row, int(label in own)))
    return tasks


def _per_task(indptr, rows, positive):
    return [list(zip(rows[indptr[t]:indptr[t + 1]].tolist(), positive[indptr[t]:indptr[t + 1]].tolist()))
            for t in range(indptr.size - 1)]


@pytest.mark.parametrize("seed, leaf_size", [(0, 5), (1, 3), (2, 40), (3, 1)])
def test_task_points_match_a_walk_of_the_tree(seed, leaf_size):
    X, Y = _problem(seed)
    Y = Y.tolil()
    Y[5, :] = 0  # a point without labels reaches nothing
    Y = sp.csr_matrix(Y)
    shape = build_shape(label_vectors(X, Y), leaf_size, seed)
    got = _per_task(*task_points(shape, Y))
    assert got == _task_points_by_walking(shape, Y)
    assert got[0] == []  # the root has no classifier


@pytest.mark.parametrize("leaf_size", [1, 3, 7, 40, 100])
def test_the_shape_is_one_balanced_tree_over_every_label(leaf_size):
    X, Y = _problem(1)
    V = label_vectors(X, Y)
    shape = build_shape(V, leaf_size, seed=3)
    TreeShape.checked(shape.children, shape.leaf_indptr, shape.leaf_labels, Y.shape[1])  # one tree, every label once
    sizes = np.diff(shape.leaf_indptr)
    leaves = shape.children[:, 0] < 0
    assert sizes[leaves].max() <= leaf_size and sizes[~leaves].sum() == 0

    def below(node):
        left, right = shape.children[node]
        return sizes[node] if left < 0 else below(left) + below(right)
    for node in np.flatnonzero(~leaves):  # balanced: the halves differ by one label at most
        left, right = shape.children[node]
        assert abs(below(left) - below(right)) <= 1 and below(left) + below(right) > leaf_size


def test_the_shape_is_the_same_at_any_thread_count_and_splits_the_planted_groups():
    X, Y = _problem(2)
    V = label_vectors(X, Y)
    one = build_shape(V, 10, seed=5, threads=1)
    for threads in (2, 3):
        other = build_shape(V, 10, seed=5, threads=threads)
        np.testing.assert_array_equal(one.children, other.children)
        np.testing.assert_array_equal(one.leaf_labels, other.leaf_labels)
    # The four groups of ten labels use disjoint features: most leaves hold one group (2-means from
    # a random start can settle with groups mixed; a random balanced split of the 40 labels into
    # leaves of ten almost never gives one a single group).
    pure = leaves = 0
    for seed in range(10):
        shape = build_shape(V, 10, seed=seed)
        for node in np.flatnonzero(shape.children[:, 0] < 0):
            labels = shape.leaf_labels[shape.leaf_indptr[node]:shape.leaf_indptr[node + 1]]
            pure += len(set((labels // 10).tolist())) == 1
            leaves += 1
    assert leaves == 40 and pure >= 24


# Leaves of up to 3 labels are solved label by label, as a node's two children are; leaves of 4 or
# more together, every label of the leaf in one pass over its points (cpp/label_tree/leaf_dual_cd.h).
@pytest.mark.parametrize("leaf_size", [3, 10])
def test_every_task_is_liblinears_squared_hinge_on_its_points_and_small_weights_are_dropped(leaf_size):
    svm = pytest.importorskip("sklearn.svm")
    X, Y = _problem(3, n=200)
    shape = build_shape(label_vectors(X, Y), leaf_size, seed=0)
    leaf_labels = np.diff(shape.leaf_indptr)[shape.children[:, 0] < 0]
    assert leaf_labels.max() <= 3 if leaf_size == 3 else leaf_labels.min() >= 4
    indptr, rows, positive = task_points(shape, Y)
    x = (X.indptr, X.indices, X.data, X.shape[1])
    w_indptr, w_indices, w_values, bias, loss = sparse_dual_cd(*x, indptr, rows, positive, 1.0, 5000, 1e-6, 0, 0.0, 2)
    assert 0.0 < loss < 1.0
    W = sp.csr_matrix((w_values, w_indices, w_indptr), shape=(indptr.size - 1, X.shape[1]))
    checked = 0
    for task in range(indptr.size - 1):
        mine, y = rows[indptr[task]:indptr[task + 1]], positive[indptr[task]:indptr[task + 1]]
        if not 0 < y.sum() < len(y):
            continue
        oracle = svm.LinearSVC(C=1.0, tol=1e-10, max_iter=100_000).fit(X[mine].astype(np.float64), y)
        got = np.asarray(X[mine] @ W[task].T.toarray()).ravel() + bias[task]
        np.testing.assert_allclose(got, oracle.decision_function(X[mine].astype(np.float64)), atol=1e-4)
        checked += 1
    assert checked > 20
    pruned = sparse_dual_cd(*x, indptr, rows, positive, 1.0, 5000, 1e-6, 0, 0.1, 2)
    kept = sp.csr_matrix((pruned[2], pruned[1], pruned[0]), shape=W.shape)
    np.testing.assert_allclose(kept.toarray(), np.where(np.abs(W.toarray()) >= 0.1, W.toarray(), 0.0), atol=1e-6)
    np.testing.assert_array_equal(pruned[3], bias)  # the bias is never dropped
    # Tasks on the same points (siblings, a leaf's labels) share one gathering on whichever thread
    # takes them: the weights are the same bits at any thread count.
    for threads in (1, 3):
        again = sparse_dual_cd(*x, indptr, rows, positive, 1.0, 5000, 1e-6, 0, 0.1, threads)
        for a, b in zip(again[:4], pruned[:4]):
            np.testing.assert_array_equal(a, b)


def test_pair_scores_are_the_rows_dotted_with_the_weights_in_any_order():
    rng = np.random.default_rng(0)
    X = sp.random(50, 30, density=0.3, format="csr", random_state=1, dtype=np.float32)
    W = sp.random(12, 30, density=0.4, format="csr", random_state=2, dtype=np.float32)
    bias = rng.normal(size=12).astype(np.float32)
    rows, tasks = rng.integers(0, 50, 400), rng.integers(0, 12, 400).astype(np.int32)
    got = sparse_pair_scores(X.indptr.astype(np.int64), X.indices, X.data, 30, rows.astype(np.int64), tasks,
                             W.indptr.astype(np.int64), W.indices, W.data, bias, 2)
    want = (X @ W.T).toarray()[rows, tasks] + bias[tasks]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pair_scores_of_long_and_short_weight_rows_and_repeated_point_features_are_exact_sums():
    # Points of 0-5 features against weight rows of 0-600 (a tree's upper nodes are long), each
    # pair once, in an order that mixes rows and tasks; a point naming a feature twice adds both.
    rng = np.random.default_rng(3)
    X = sp.random(40, 2000, density=0.001, format="csr", random_state=4, dtype=np.float32)
    X = sp.vstack([X, sp.csr_matrix(([1.0, 2.0], ([0, 0], [7, 7])), shape=(1, 2000), dtype=np.float32)]).tocsr()
    X.has_canonical_format = False  # the last row names feature 7 twice
    lengths = np.array([0, 1, 5, 40, 300, 600])
    W = sp.vstack([sp.random(1, 2000, density=n / 2000, format="csr", random_state=int(n), dtype=np.float32)
                   for n in lengths]).tocsr()
    W = W.tolil()
    W[W.shape[0] - 1, 7] = 0.5
    W = W.tocsr()
    W.sort_indices()
    bias = rng.normal(size=W.shape[0]).astype(np.float32)
    mixed = rng.permutation(X.shape[0] * W.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), W.shape[0])[mixed]
    tasks = np.tile(np.arange(W.shape[0], dtype=np.int32), X.shape[0])[mixed]
    got = sparse_pair_scores(X.indptr.astype(np.int64), X.indices, X.data, 2000, rows.astype(np.int64), tasks,
                             W.indptr.astype(np.int64), W.indices, W.data, bias, 2)
    want = (X.toarray().astype(np.float64) @ W.toarray().T)[rows, tasks] + bias[tasks]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    last = np.flatnonzero((rows == X.shape[0] - 1) & (tasks == W.shape[0] - 1))[0]
    assert got[last] == pytest.approx(bias[-1] + 3.0 * 0.5)


def test_beam_search_is_the_exact_ranking_when_the_beam_holds_every_leaf():
    X, Y = _problem(4)
    tree = LabelTree.fit(X, Y, leaf_size=4, threads=2)
    leaves = int((tree.shape.children[:, 0] < 0).sum())
    ids, log_p = tree.top(X[:40], 8, beam=leaves, threads=2)
    every = np.arange(Y.shape[1])
    exact = tree.log_probabilities(X[:40], np.repeat(np.arange(40), every.size), np.tile(every, 40)).reshape(40, -1)
    np.testing.assert_allclose(log_p, -np.sort(-exact, axis=1)[:, :8], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.take_along_axis(exact, ids.astype(np.int64), 1), log_p, rtol=1e-5, atol=1e-5)
    narrow, narrow_log_p = tree.top(X[:40], 8, beam=1)
    assert np.all(narrow_log_p <= log_p + 1e-5)  # a narrower beam never finds better
    assert tree.top(X[:40], 8)[0].shape == (40, 8)


def test_a_labels_log_probability_sums_its_path():
    X, Y = _problem(5)
    tree = LabelTree.fit(X, Y, leaf_size=6, threads=1)
    W = sp.csr_matrix((tree.values, tree.indices, tree.indptr), shape=(tree.bias.size, X.shape[1]))
    scores = (X @ W.T).toarray() + tree.bias
    parent, leaf_of = tree.shape.parents(), tree.shape.leaf_of_label(Y.shape[1])
    for row, label in [(0, 0), (3, 17), (10, 39), (7, 25)]:
        want, node = log_probability(scores[row, tree.shape.nodes + label:tree.shape.nodes + label + 1])[0], leaf_of[label]
        while parent[node] >= 0:
            want += log_probability(scores[row, node:node + 1])[0]
            node = parent[node]
        got = tree.log_probabilities(X, np.array([row]), np.array([label]))[0]
        assert got == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_a_forest_is_its_trees_averaged_and_its_first_tree_is_the_one_tree_fit():
    X, Y = _problem(5)
    forest = LabelForest.fit(X, Y, trees=3, leaf_size=5, threads=2, seed=7)
    assert len(forest.trees) == 3
    one = LabelTree.fit(X, Y, leaf_size=5, threads=2, seed=7)
    for name, a in one.to_arrays().items():
        np.testing.assert_array_equal(forest.trees[0].to_arrays()[name], a, err_msg=name)
    assert not np.array_equal(forest.trees[0].shape.leaf_labels, forest.trees[1].shape.leaf_labels)
    rows = np.repeat(np.arange(30), 40)
    labels = np.tile(np.arange(40), 30)
    mean = np.mean([t.log_probabilities(X, rows, labels) for t in forest.trees], axis=0)
    np.testing.assert_allclose(forest.log_probabilities(X, rows, labels), mean, rtol=1e-5, atol=1e-6)
    scores = np.mean([t.label_scores(X, rows, labels) for t in forest.trees], axis=0)
    np.testing.assert_allclose(forest.label_scores(X, rows, labels), scores, rtol=1e-5, atol=1e-6)
    found = forest.candidates(X[:30], 4)
    for i, tree in enumerate(forest.trees):
        np.testing.assert_array_equal(found[:, 4 * i:4 * i + 4], tree.top(X[:30], 4)[0])
    ids, log_p = forest.top(X[:30], 4)
    for row in range(30):  # the oracle: every label the beams found, by the trees' mean
        union = np.unique(found[row][found[row] >= 0])
        by_mean = forest.log_probabilities(X, np.full(union.size, row), union)
        best = np.argsort(-by_mean, kind="stable")[:4]
        np.testing.assert_allclose(log_p[row], by_mean[best], rtol=1e-6)
        assert set(ids[row]) == set(union[best]) or np.unique(by_mean).size < by_mean.size
    with pytest.raises(ValueError, match="at least 1"):
        LabelForest.fit(X, Y, trees=0)


def test_slide_train_says_it_trains_the_trees_averaged():
    from slide.runs.loop import _after_training
    for trees, said in ((1, "training a label tree (at most 6 labels a leaf; where the labels have fewer than 5 "
                             "points each, its classifiers"),
                        (3, "training 3 label trees, averaged (at most 6 labels a leaf; where the labels have fewer "
                            "than 5 points each, their classifiers")):
        net = slide.Network(20, 10, hidden=(4,), mode="dense", neighbours=0, label_tree=6, label_trees=trees)
        assert said in _after_training(net, object())


def test_a_network_keeps_its_label_trees_in_its_file_and_refuses_a_damaged_forest(tmp_path):
    train, test = make_train_test(600, 100, 200, 80, seed=3, avg_nnz=10, avg_labels=2)
    net = slide.Network(200, 80, hidden=(16,), mode="dense", neighbours=0, label_tree=6, label_trees=2, threads=2,
                        seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=64, validation_split=0.1, progress=False)
    assert len(net.tree.trees) == 2 and "tree1.bias" in net.tree.to_arrays()
    net.save(tmp_path / "m.npz")
    back = slide.Network.load(tmp_path / "m.npz")
    assert back.label_trees == 2 and len(back.tree.trees) == 2
    for a, b in zip(back.predict(test.X, k=5), net.predict(test.X, k=5)):
        np.testing.assert_array_equal(a, b)
    from slide.model_file import write_model
    import zipfile, json
    with zipfile.ZipFile(tmp_path / "m.npz") as zf:
        stored = {n[:-4]: np.load(zf.open(n)) for n in zf.namelist()}
    header = json.loads(stored.pop("__slide_header__").tobytes())
    header.pop("checksums")
    for change, message in ((lambda s: s.pop("tree1.bias"), r"label tree 1 lacks arrays \['tree1.bias'\]"),
                            (lambda s: s.update({"tree3.bias": s["tree1.bias"]}),
                             r"arrays \[.tree3.bias.\] belong to no label tree 0-1"),
                            (lambda s: s["tree1.weights.values"].__setitem__(0, np.nan), "label tree 1: .*NaN")):
        damaged = {k: v.copy() for k, v in stored.items()}
        change(damaged)
        write_model(tmp_path / "bad.npz", header, damaged)
        with pytest.raises(ModelFileError, match=f"bad.npz: the label trees are malformed: {message}"):
            slide.Network.load(tmp_path / "bad.npz")


def test_a_network_with_a_label_tree_picks_its_weight_and_keeps_it_in_its_file(tmp_path):
    train, test = make_train_test(900, 200, 300, 120, seed=3, avg_nnz=12, avg_labels=2)
    net = slide.Network(300, 120, hidden=(16,), mode="dense", neighbours=0, label_tree=8, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    assert net.tree is not None and net.tree.nodes > 15
    from slide.prediction.methods import TREE_WEIGHTS
    assert net.weight_choice.grid[2] in TREE_WEIGHTS
    assert net.tree_weight in TREE_WEIGHTS or net.weight_choice.learned  # learned weights lie off the grid
    net.tree_weight = 1.0
    with_tree = net.predict(test.X, k=5)
    net.tree_weight = 0.0
    without = net.predict(test.X, k=5)
    assert not np.array_equal(with_tree[0], without[0])
    net.tree_weight = 1.0
    net.save(tmp_path / "m.npz")
    back = slide.Network.load(tmp_path / "m.npz")
    assert back.label_tree == 8 and back.tree_weight == 1.0
    for a, b in zip(back.predict(test.X, k=5), with_tree):
        np.testing.assert_array_equal(a, b)
    probabilities = back.predict_proba(test.X[:5], k=3)[1]
    assert np.all((probabilities > 0) & (probabilities <= 1))


def test_the_trees_classifiers_replace_the_reranker_only_where_labels_have_few_points():
    from slide.prediction.methods import TREE_RESCORES_BELOW
    many, _ = make_train_test(1200, 10, 300, 60, seed=4, avg_nnz=12, avg_labels=2)  # 40 points a label
    few, _ = make_train_test(200, 10, 300, 600, seed=4, avg_nnz=12, avg_labels=2)   # under 1 a label
    for data, reranks in ((many, True), (few, False)):
        counts = np.bincount(sp.csr_matrix(data.Y).indices, minlength=data.Y.shape[1])
        assert (counts.sum() / np.count_nonzero(counts) >= TREE_RESCORES_BELOW) == reranks
        net = slide.Network(300, data.Y.shape[1], hidden=(8,), mode="dense", neighbours=0, rerank=10, label_tree=8,
                            threads=1, seed=0)
        net.fit(data.X, data.Y, epochs=1, batch_size=64, validation_split=0.1, progress=False)
        assert net.tree is not None and (net.reranker is not None) == reranks
        fusion = net.voted.fusion(data.X[:20], 5, True)[0]
        if not reranks:  # the re-ranker's channel holds the tree's own classifiers' scores
            want = net.tree.label_scores(data.X[:20], fusion.rows, fusion.ids)
            np.testing.assert_allclose(fusion.rerank, want, rtol=1e-6)


def test_a_network_without_points_in_memory_trains_no_tree():
    train, _ = make_train_test(300, 10, 100, 50, seed=1, avg_nnz=8, avg_labels=2)
    net = slide.Network(100, 50, hidden=(8,), mode="dense", neighbours=0, label_tree=8, threads=1, seed=0)
    net.fit(((train.X[i:i + 100], train.Y[i:i + 100]) for i in range(0, 300, 100)), progress=False)
    assert net.tree is None
    net.fit_label_tree(train.X, train.Y)
    assert net.tree is not None


@pytest.mark.parametrize("held", [np.array([], np.int64), np.array([0, 7, 150, 299])])
def test_a_stream_of_one_shard_trains_the_tree_memory_trains_on_the_same_points(tmp_path, held):
    from slide.datasets import Stream
    from slide.datasets.shards import write_split
    train, _ = make_train_test(300, 10, 100, 50, seed=1, avg_nnz=8, avg_labels=2)
    net = slide.Network(100, 50, hidden=(8,), mode="dense", neighbours=0, label_tree=8, threads=1, seed=0)
    stream = Stream(write_split(tmp_path / "s", train, shard_rows=1000).path, seed=5)
    if held.size:
        stream.hold_out(held)
    rows = np.setdiff1d(np.arange(300), held)
    want = net.fit_label_tree(train.X[rows], train.Y[rows]).tree.to_arrays()
    net.tree = None
    got = net.fit_label_tree(stream).tree.to_arrays()
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_fit_on_a_stream_trains_a_tree_from_one_shard_and_none_from_several(tmp_path):
    from slide.datasets import Stream
    from slide.datasets.shards import write_split
    train, val = make_train_test(400, 100, 100, 50, seed=1, avg_nnz=8, avg_labels=2)
    for shard_rows, has_tree in ((1000, True), (150, False)):
        stream = Stream(write_split(tmp_path / f"s{shard_rows}", train, shard_rows=shard_rows).path)
        net = slide.Network(100, 50, hidden=(8,), mode="dense", neighbours=0, rerank=4, label_tree=8, threads=1,
                            seed=0)
        net.fit(stream, epochs=1, batch_size=64, validation_data=(val.X, val.Y), progress=False)
        assert (net.tree is not None) == has_tree and net.memory is None
        if has_tree:
            from slide.prediction.methods import TREE_WEIGHTS
            assert net.tree_weight in TREE_WEIGHTS or net.weight_choice.learned
        else:
            with pytest.raises(ValueError, match="this one has 3 shards"):
                net.fit_label_tree(stream)


def test_fit_label_tree_refuses_what_it_cannot_train_on(tmp_path):
    from slide.datasets import Stream
    from slide.datasets.shards import write_split
    train, _ = make_train_test(100, 10, 100, 50, seed=1, avg_nnz=8, avg_labels=2)
    net = slide.Network(100, 50, hidden=(8,), mode="dense", neighbours=0, label_tree=8, threads=1, seed=0)
    stream = Stream(write_split(tmp_path / "s", train, shard_rows=1000).path)
    with pytest.raises(ValueError, match="without Y"):
        net.fit_label_tree(stream, train.Y)
    with pytest.raises(ValueError, match="need Y"):
        net.fit_label_tree(train.X)


def _saved_with_tree(tmp_path):
    train, _ = make_train_test(400, 10, 100, 60, seed=2, avg_nnz=8, avg_labels=2)
    net = slide.Network(100, 60, hidden=(8,), mode="dense", neighbours=0, label_tree=6, threads=1, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=64, progress=False)
    return net


def _damage(arrays, name, change):
    arrays = {k: v.copy() for k, v in arrays.items()}
    change(arrays[name]) if name in arrays else None
    return arrays


@pytest.mark.parametrize("name, change, message", [
    ("tree.children", lambda a: a.__setitem__(slice(0, 2), [0, 0]), "numbered after it"),
    ("tree.children", lambda a: a.__setitem__(0, -1), "two children or none"),
    ("tree.children", lambda a: a.__setitem__(slice(2, 4), a[0:2]), "numbered after it|exactly one node"),
    ("tree.leaf_labels", lambda a: a.__setitem__(0, a[1]), "each of the 60 labels once"),
    ("tree.leaf_labels", lambda a: a.__setitem__(0, 60), "each of the 60 labels once"),
    ("tree.leaf_indptr", lambda a: a.__setitem__(1, 3), "inner node of the tree holds labels|leaf_indptr"),
    ("tree.weights.indices", lambda a: a.__setitem__(0, 100), "features outside"),
    ("tree.weights.values", lambda a: a.__setitem__(0, np.nan), "NaN or inf"),
    ("tree.bias", lambda a: a.__setitem__(0, np.inf), "NaN or inf"),
    ("tree.weights.indptr", lambda a: a.__setitem__(1, a[2] + 1), "without decreasing"),
    ("tree.weights.indices", lambda a: a.__setitem__(slice(0, 2), a[1::-1]), "row 1 names its features out of"),
])
def test_a_damaged_tree_is_refused_with_what_is_wrong(tmp_path, name, change, message):
    net = _saved_with_tree(tmp_path)
    arrays = _damage(net.tree.to_arrays(), name, change)
    with pytest.raises(ValueError, match=message):
        LabelTree.from_arrays(arrays, 100, 60)
    from slide.model_file import write_model
    path = tmp_path / "bad.npz"
    net.save(path)
    import zipfile, json
    with zipfile.ZipFile(path) as zf:
        stored = {n[:-4]: np.load(zf.open(n)) for n in zf.namelist()}
    header = json.loads(stored.pop("__slide_header__").tobytes())
    stored.update(arrays)
    header.pop("checksums")
    write_model(path, header, stored)
    with pytest.raises(ModelFileError, match=f"{path}.*the label tree"):
        slide.Network.load(path)


def test_the_engine_refuses_bad_tree_arrays_before_touching_them():
    children = np.array([1, 2, -1, -1, -1, -1], np.int64)
    leaf_indptr, leaf_labels = np.array([0, 0, 2, 4], np.int64), np.arange(4, dtype=np.int64)
    y_indptr, y_indices = np.array([0, 1], np.int64), np.array([3], np.int32)
    with pytest.raises(ValueError, match="names node 3"):
        tree_task_points(np.array([1, 3, -1, -1, -1, -1], np.int64), leaf_indptr, leaf_labels, y_indptr, y_indices, 4)
    with pytest.raises(ValueError, match="names label 4"):
        tree_task_points(children, leaf_indptr, np.array([0, 1, 2, 4], np.int64), y_indptr, y_indices, 4)
    with pytest.raises(ValueError, match="leaf_indptr"):
        tree_task_points(children, np.array([0, 0, 2], np.int64), leaf_labels, y_indptr, y_indices, 4)
    V = sp.csr_matrix(np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match="leaf_size"):
        tree_shape(V.indptr.astype(np.int64), V.indices, V.data, 4, 0, 20, 1e-4, 0, 1)
    X = sp.csr_matrix(np.eye(3, dtype=np.float32))
    x = (X.indptr.astype(np.int64), X.indices, X.data, 3)
    with pytest.raises(ValueError, match="feature 5"):
        sparse_pair_scores(*x, np.zeros(1, np.int64), np.zeros(1, np.int32), np.array([0, 1], np.int64),
                           np.array([5], np.int32), np.ones(1, np.float32), np.zeros(1, np.float32), 1)
    with pytest.raises(ValueError, match="task 1 lies outside"):
        sparse_pair_scores(*x, np.zeros(1, np.int64), np.ones(1, np.int32), np.array([0, 1], np.int64),
                           np.array([0], np.int32), np.ones(1, np.float32), np.zeros(1, np.float32), 1)
    with pytest.raises(ValueError, match="row 0 names its features out of ascending order"):
        sparse_pair_scores(*x, np.zeros(1, np.int64), np.zeros(1, np.int32), np.array([0, 2], np.int64),
                           np.array([2, 1], np.int32), np.ones(2, np.float32), np.zeros(1, np.float32), 1)


def test_the_tree_weight_is_picked_with_every_pair_and_ties_go_to_the_smaller():
    from slide.neighbours import Fusion
    from slide.prediction.weight_grid import grid_pick
    ids = np.array([[0, 1], [2, 3]], np.int32)
    logits = np.array([[0.9, 1.0], [0.9, 1.0]], np.float32)
    truth = sp.csr_matrix(([1.0, 1.0], ([0, 1], [0, 2])), shape=(2, 4))
    # The vote rights row 0 and wrongs row 1 beyond what the tree can mend; the tree rights both.
    votes = sp.csr_matrix(([1.0, 5.0], ([0, 1], [0, 3])), shape=(2, 4), dtype=np.float32)
    logits_of = lambda rows, labels: np.where(np.isin(labels, [0, 2]), 0.9, 1.0).astype(np.float32)  # noqa: E731
    tree_of = lambda rows, labels: np.where(np.isin(labels, [0, 2]), 0.0, -1.0)  # noqa: E731
    fusion = Fusion(ids, logits, votes, logits_of, None, tree_of)
    # Each triple by its own score (steps=0): the argmax, ties to the smaller weights.
    without_tree = grid_pick(fusion, truth, (1,), "P@1", (0.0, 1.0), (0.0,), (0.0,), None, steps=0)
    assert without_tree[1:] == ((1.0, 0.0), {(0.0, 0.0): 0.0, (1.0, 0.0): 0.5}, 0.5)
    # Beside that pair no tree weight helps (steps from it would stop there); without the vote,
    # 0.5 x the tree's gap of 1 outweighs the logits' lead of 0.1 on both rows.
    tree_weight, pair, scores, judged = grid_pick(fusion, truth, (1,), "P@1", (0.0, 1.0), (0.0,),
                                                   (0.0, 0.5, 1.0, 2.0), None, steps=0)
    assert (tree_weight, pair, scores[pair], judged) == (0.5, (0.0, 0.0), 1.0, 1.0)
    assert fusion.top(0.0, 1, 0.0, 0.0)[0].ravel().tolist() == [1, 3]  # without the tree, the logits rank


def test_by_default_each_triple_is_judged_with_its_neighbours_on_the_grid():
    from slide.neighbours import Fusion, pick_weights
    from slide.prediction.weight_grid import grid_pick
    from slide.prediction.weight_grid import NEIGHBOURHOOD
    rng = np.random.default_rng(4)
    n, k = 40, 4
    ids = np.tile(np.arange(k, dtype=np.int32), (n, 1))
    logits = rng.normal(size=(n, k)).astype(np.float32)
    truth = sp.csr_matrix((np.ones(n), (np.arange(n), rng.integers(0, k, n))), shape=(n, k))
    votes = sp.csr_matrix(rng.random((n, k)).astype(np.float32) * (rng.random((n, k)) < 0.5))
    logits_of = lambda rows, labels: logits[rows, labels]  # noqa: E731
    tree = rng.normal(size=(n, k)).astype(np.float32)
    rerank = rng.normal(size=(n, k)).astype(np.float32)
    fusion = Fusion(ids, logits, votes, logits_of, lambda rows, labels: rerank[rows, labels],
                    lambda rows, labels: tree[rows, labels])
    weights, rerank_weights, tree_weights = (0.0, 0.5, 1.0, 2.0, 4.0), (0.0, 1.0, 2.0), (0.0, 0.5, 1.0, 2.0)
    got = grid_pick(fusion, truth, (1,), "P@1", weights, rerank_weights, tree_weights, None)
    # By brute force: each triple's mean over the triples one step from it along any axis.
    raw = {t: pick_weights(fusion, truth, (1,), "P@1", weights, rerank_weights, tree_weight=t)[1] for t in tree_weights}
    axes = (tree_weights, weights, rerank_weights)
    def judged(at):
        near = [raw[tree_weights[a]][(weights[b], rerank_weights[c])]
                for a in range(len(tree_weights)) for b in range(len(weights)) for c in range(len(rerank_weights))
                if max(abs(a - at[0]), abs(b - at[1]), abs(c - at[2])) <= NEIGHBOURHOOD]
        return sum(near) / len(near)
    cells = [(a, b, c) for a in range(4) for b in range(5) for c in range(3)]
    best = max(cells, key=lambda at: (round(judged(at), 12), *(-axes[i][at[i]] for i in range(3))))
    assert NEIGHBOURHOOD == 1
    assert got[0] == tree_weights[best[0]] and got[1] == (weights[best[1]], rerank_weights[best[2]])
    assert got[2] == raw[got[0]] and got[3] == pytest.approx(judged(best))
    # The neighbourhood changes the pick here: the best triple alone is another.
    alone = grid_pick(fusion, truth, (1,), "P@1", weights, rerank_weights, tree_weights, None, steps=0)
    assert (alone[0], alone[1]) != (got[0], got[1])


def test_at_vote_weight_0_the_neighbours_labels_stay_candidates_beside_a_tree_as_when_the_weights_were_picked():
    train, _ = make_train_test(300, 10, 100, 50, seed=5, avg_nnz=8, avg_labels=2)
    net = slide.Network(100, 50, hidden=(8,), mode="dense", neighbours=5, rerank=0, label_tree=8, threads=1, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=64, progress=False)
    net.neighbour_weight = 0.0
    assert net.composed().memory is net.memory and net.composed().tree is net.tree


def _best_per_row_by_sorting_everything(rows, items, scores, keep):
    order = np.lexsort((-scores, rows))
    rows, items, scores = rows[order], items[order], scores[order]
    kept = np.arange(rows.size) - np.searchsorted(rows, rows) < keep
    return rows[kept], items[kept], scores[kept]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("keep", [1, 3, 10, 25])
def test_the_beams_top_per_row_is_a_full_sorts_with_ties_in_the_order_given(seed, keep):
    """best_per_row partitions a rows x pairs table to find each row's keep-th score before it
    sorts; it must pick what sorting every pair picks, equal scores (a leaf's labels whose weights
    were all dropped score their bias alone) in the order given, -inf and NaN scores included."""
    from slide.label_tree.tree import best_per_row

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    rows = np.repeat(np.arange(n), rng.integers(0, 120, size=n))
    rows = rows[rng.permutation(rows.size)] if seed % 2 else rows  # in row order (the beam's) or not
    dtype = np.float32 if seed < 4 else np.float64
    scores = rng.integers(-8, 0, size=rows.size).astype(dtype) / 4  # many ties
    scores[rng.random(rows.size) < 0.02] = -np.inf
    if seed == 5:
        scores[rng.random(rows.size) < 0.01] = np.nan
    items = rng.permutation(rows.size).astype(np.int32)
    got = best_per_row(rows, items, scores, keep)
    for a, b in zip(got, _best_per_row_by_sorting_everything(rows, items, scores, keep)):
        np.testing.assert_array_equal(a, b)


def test_a_grids_neighbourhood_means_cut_at_its_edges():
    from slide.prediction.weight_grid import neighbourhood_means
    # A lone peak loses to a plateau once each cell is judged with its neighbours.
    line = np.array([0.0, 0.0, 1.0, 0.0, 0.75, 0.75, 0.75])
    judged = neighbourhood_means(line, 1)
    assert judged == pytest.approx([0.0, 1 / 3, 1 / 3, 1.75 / 3, 0.5, 0.75, 0.75])
    assert int(np.argmax(line)) == 2 and int(np.argmax(judged)) == 5
    assert np.array_equal(neighbourhood_means(line, 0), line)
    grid = np.random.default_rng(0).random((3, 4, 2))
    brute = np.array([[[grid[max(0, a - 1):a + 2, max(0, b - 1):b + 2, max(0, c - 1):c + 2].mean() for c in range(2)]
                       for b in range(4)] for a in range(3)])
    assert neighbourhood_means(grid, 1) == pytest.approx(brute)
    assert neighbourhood_means(grid, 5) == pytest.approx(np.full(grid.shape, grid.mean()))
    with pytest.raises(ValueError, match="steps must be at least 0"):
        neighbourhood_means(grid, -1)
