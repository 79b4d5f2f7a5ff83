"""slide.estimator.SlideClassifier in the scikit-learn ecosystem: scikit-learn's own estimator
checks, clone and grid search, pickling through the model file format, class labels of any type,
multi-label ranking, and the settings picked from the data's shape."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

sklearn = pytest.importorskip("sklearn")  # in the test extra: never skipped in CI
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import MaxAbsScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from slide.datasets import make_train_test  # noqa: E402
from slide.estimator import SlideClassifier  # noqa: E402
from slide.shape_defaults import SMALL_OUTPUT_PRESET, small_output_schedule  # noqa: E402


@parametrize_with_checks([SlideClassifier(threads=1)])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def _blobs(n=300, classes=("cat", "dog", "eel"), seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(classes), 20)) * 3
    y = rng.integers(0, len(classes), n)
    X = centres[y] + rng.normal(size=(n, 20))
    return X, np.array(classes)[y]


def test_string_classes_are_learned_and_returned():
    X, y = _blobs()
    clf = SlideClassifier(threads=1, epochs=10).fit(X[:200], y[:200])
    assert list(clf.classes_) == ["cat", "dog", "eel"]
    assert clf.predict(X[200:]).dtype == y.dtype
    assert clf.score(X[200:], y[200:]) > 0.9
    proba = clf.predict_proba(X[200:])
    assert proba.shape == (100, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X[200:]))
    assert clf.n_features_in_ == 20


def test_settings_come_from_the_shape_unless_given():
    X, y = _blobs(n=60)
    picked = SlideClassifier(threads=1, epochs=1).fit(X, y).network_
    assert picked.mode == "dense" and picked.input_norm == "l2"  # small output preset
    assert picked.hidden == tuple(SMALL_OUTPUT_PRESET["hidden"])
    assert picked.learning_rate == SMALL_OUTPUT_PRESET["learning_rate"]
    assert picked.rerank == 0 and picked.reranker is None  # a few classes: no re-ranker (on from 257 labels)
    assert picked.label_tree == 0 and picked.tree is None  # nor a label tree (the LSH preset's)
    given = SlideClassifier(threads=1, epochs=1, hidden=[32], mode="batch", learning_rate=0.01,
                            neighbours=0, rerank=3, label_tree=2, label_trees=2).fit(X, y).network_
    assert given.mode == "batch" and given.hidden == (32,) and given.learning_rate == 0.01 and given.neighbours == 0
    assert given.rerank == 3 and given.reranker is not None and given.reranker.shortlist == 3
    assert given.label_tree == 2 and given.label_trees == len(given.tree.trees) == 2
    assert picked.label_trees == 1  # the table's default
    with pytest.raises(ValueError, match="mode must be one of"):
        SlideClassifier(mode="fast").fit(X, y)


def test_the_number_of_samples_sets_batch_and_epochs():
    X, y = _blobs(n=60)
    clf = SlideClassifier(threads=1)
    _, fit = clf._settings(X.shape[1], 3, 60)
    assert (fit["batch_size"], fit["epochs"]) == small_output_schedule(60)
    _, fit = SlideClassifier(threads=1, epochs=2, batch_size=7)._settings(X.shape[1], 3, 60)
    assert (fit["batch_size"], fit["epochs"]) == (7, 2)


def test_many_labels_judge_epochs_as_the_cli_does():
    """Above 8,192 labels the estimator holds out points and judges the epochs on them as
    `slide train` does: early stopping, the epochs' mean and nDCG@5."""
    from slide.shape_defaults import LARGE_OUTPUT_PRESET

    _, fit = SlideClassifier(threads=1)._settings(100, 10_000, 5_000)
    assert fit["validation_split"] == LARGE_OUTPUT_PRESET["validation_split"] > 0
    assert (fit["early_stopping"], fit["averaging"], fit["monitor"]) == (2, "swa", "nDCG@5")
    _, fit = SlideClassifier(threads=1, validation_split=0.0)._settings(100, 10_000, 5_000)
    assert "monitor" not in fit and "early_stopping" not in fit


def test_few_points_a_label_pick_the_trees_leaves_as_the_cli_does(monkeypatch):
    """The estimator counts y's points a label and hands them to the shape's preset, as `slide
    train` does: below 5 a label, two trees of leaves of 100; a label_tree given stays."""
    from slide import estimator
    from slide.label_tree import FEW_POINTS_LEAF_SIZE, FEW_POINTS_TREES, LEAF_SIZE

    net, _ = SlideClassifier(threads=1)._settings(100, 10_000, 5_000, 2.0)
    assert net["label_tree"] == FEW_POINTS_LEAF_SIZE and net["label_trees"] == FEW_POINTS_TREES
    more, _ = SlideClassifier(threads=1)._settings(100, 10_000, 5_000, 7.0)
    assert more["label_tree"] == LEAF_SIZE and more["label_trees"] == 1
    assert SlideClassifier(threads=1, label_trees=3)._settings(100, 10_000, 5_000, 2.0)[0]["label_trees"] == 3
    assert SlideClassifier(threads=1, label_tree=7)._settings(100, 10_000, 5_000, 2.0)[0]["label_tree"] == 7
    wide, _ = SlideClassifier(threads=1)._settings(1_449, 45, 333, 9.3)  # Medical's shape: a tree at a fixed weight
    assert wide["label_tree"] == LEAF_SIZE and wide["tree_weight"] == 2.0
    assert SlideClassifier(threads=1, tree_weight=0.5)._settings(1_449, 45, 333, 9.3)[0]["tree_weight"] == 0.5
    assert SlideClassifier(threads=1)._settings(1_001, 53, 1_123, 72.0)[0]["label_tree"] == 0  # Enron's: none
    seen = []
    original = estimator.preset_for_shape
    monkeypatch.setattr(estimator, "preset_for_shape", lambda *args: seen.append(args) or original(*args))
    X, _ = _blobs(n=60)
    Y = np.eye(6, dtype=np.int64)[np.arange(60) % 3]  # labels 0-2: 20 points each; 3 and 4: none
    Y[:10, 5] = 1  # label 5: 10 points
    SlideClassifier(threads=1, epochs=1).fit(X, Y)
    assert seen[-1][3] == pytest.approx(70 / 4)
    SlideClassifier(threads=1, epochs=1).fit(X, np.arange(60) % 4)  # multi-class: 15 points a class
    assert seen[-1][3] == pytest.approx(15.0)


def test_clone_grid_search_and_pipeline():
    X, y = _blobs(n=150)
    clf = SlideClassifier(threads=1, epochs=3, hidden=[16])
    assert clone(clf).get_params() == clf.get_params()
    search = GridSearchCV(clf, {"learning_rate": [1e-3, 1e-2]}, cv=2).fit(X, y)
    assert search.best_params_["learning_rate"] in (1e-3, 1e-2)
    pipe = make_pipeline(MaxAbsScaler(), SlideClassifier(threads=1, epochs=3)).fit(sp.csr_matrix(X), y)
    assert pipe.score(sp.csr_matrix(X), y) > 0.9


def test_pickling_keeps_every_prediction(tmp_path):
    joblib = pytest.importorskip("joblib")
    X, y = _blobs(n=120)
    clf = SlideClassifier(threads=1, epochs=3).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    joblib.dump(clf, tmp_path / "clf.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "clf.joblib").predict(X), clf.predict(X))
    # the pickle holds the checked model file: damaged bytes are refused, not loaded
    data = bytearray(pickle.dumps(clf.network_))
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="corrupted|truncated|checksum"):
        pickle.loads(bytes(data))


def test_multi_label_is_top_k_ranking():
    train, test = make_train_test(800, 200, 300, 40, seed=1, avg_nnz=15, avg_labels=3)
    Y = train.Y.toarray().astype(int)  # what MultiLabelBinarizer gives
    clf = SlideClassifier(threads=1, epochs=10, top_k=3).fit(train.X, Y)
    pred = clf.predict(test.X)
    assert sp.issparse(pred) and pred.shape == (200, 40)
    assert (pred.getnnz(axis=1) == 3).all()
    top1 = clf.network_.predict(test.X, k=1)[0][:, 0]
    p_at_1 = np.mean(test.Y.toarray()[np.arange(200), top1] > 0)
    assert clf.score(test.X, test.Y) == pytest.approx(p_at_1)
    assert p_at_1 > 0.5
    sparse_fit = SlideClassifier(threads=1, epochs=10, top_k=3).fit(train.X, train.Y)  # a sparse indicator too
    np.testing.assert_array_equal(sparse_fit.predict(test.X).toarray(), pred.toarray())
    with pytest.raises(ValueError, match="indicator"):
        SlideClassifier(threads=1).fit(train.X, np.where(Y > 0, 2.5, 0.0))
