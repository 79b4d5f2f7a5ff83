"""User errors become ValueError naming what was expected; nothing crashes."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide


@pytest.fixture(scope="module")
def net():
    return slide.Network(50, 200, hidden=(16,), lsh=slide.LSHConfig(k=2, l=4), threads=1)


def _X(n=4, cols=50):
    return sp.random(n, cols, density=0.2, format="csr", dtype=np.float32, random_state=0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_dim=0), "input_dim"),
    (dict(output_dim=-3), "output_dim"),
    (dict(hidden=()), "hidden"),
    (dict(hidden=(0,)), "hidden layer size"),
    (dict(learning_rate=-1.0), "learning_rate"),
    (dict(learning_rate=float("nan")), "learning_rate"),
    (dict(threads=0), "threads"),
    (dict(optimizer="adagrad"), "optimizer"),
    (dict(lr_schedule="warp"), "lr_schedule"),
    (dict(lsh="dwta"), "LSHConfig"),
    (dict(hidden_lsh=(slide.LSHConfig(),)), "first hidden layer"),
    (dict(beta2=1.5), "beta2"),
])
def test_bad_constructor_arguments(kwargs, match):
    args = dict(input_dim=50, output_dim=200, hidden=(16,), threads=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        slide.Network(**args)


def test_bad_features(net):
    Y = [[1], [2], [3], [4]]
    with pytest.raises(ValueError, match="columns, expected input_dim=50"):
        net.fit(_X(cols=51), Y, progress=False)
    X = _X()
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        net.fit(X, Y, progress=False)
    X = _X()
    X.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        net.predict(X)
    with pytest.raises(ValueError, match="scipy.sparse"):
        net.fit([[1, 2]], Y, progress=False)
    with pytest.raises(ValueError, match="2-D"):
        net.predict(np.zeros(50, np.float32))
    with pytest.raises(ValueError, match="real numbers"):
        net.predict(sp.csr_matrix(np.ones((2, 50), dtype=np.complex64)))


def test_bad_labels(net):
    X = _X()
    with pytest.raises(ValueError, match=r"outside \[0, 200\)"):
        net.fit(X, [[1], [2], [200], [4]], progress=False)
    with pytest.raises(ValueError, match=r"outside \[0, 200\)"):
        net.fit(X, [[1], [-1], [2], [4]], progress=False)
    with pytest.raises(ValueError, match="rows but X has"):
        net.fit(X, [[1], [2]], progress=False)
    with pytest.raises(ValueError, match="columns, expected output_dim=200"):
        net.fit(X, sp.csr_matrix((4, 300)), progress=False)
    with pytest.raises(ValueError, match="dense"):
        net.fit(X, np.zeros((4, 200)), progress=False)


def test_bad_fit_and_predict_arguments(net):
    X, Y = _X(), [[1], [2], [3], [4]]
    for kwargs, match in [(dict(epochs=0), "epochs"), (dict(batch_size=0), "batch_size"),
                          (dict(validation_mode="fuzzy"), "validation_mode")]:
        with pytest.raises(ValueError, match=match):
            net.fit(X, Y, progress=False, **kwargs)
    with pytest.raises(ValueError, match="exceeds output_dim"):
        net.predict(X, k=201)
    with pytest.raises(ValueError, match="k must be"):
        net.predict(X, k=0)
    with pytest.raises(ValueError, match="mode"):
        net.predict(X, mode="magic")
    dense = slide.Network(50, 200, hidden=(16,), lsh=None, threads=1)
    with pytest.raises(ValueError, match="sampled output layer"):
        dense.predict(X, mode="sparse")


def test_core_rejects_bad_arrays_without_crashing(net):
    X = _X()
    core = net._core
    indptr, indices, data = X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data
    yp, yi = np.array([0, 1, 2, 3, 4], np.int64), np.array([1, 2, 3, 4], np.int32)
    rows = np.arange(4, dtype=np.int64)
    bad_indices = indices.copy()
    bad_indices[0] = 10**6
    with pytest.raises(ValueError, match="feature id"):
        core.train_batch(indptr, bad_indices, data, yp, yi, rows, 0.1)
    with pytest.raises(ValueError, match="out of range"):
        core.train_batch(indptr, indices, data, yp, yi, np.array([7], np.int64), 0.1)
    with pytest.raises(ValueError, match="label"):
        core.train_batch(indptr, indices, data, yp, np.array([1, 2, 999, 4], np.int32), rows, 0.1)
    with pytest.raises(ValueError, match="sorted and unique"):
        core.train_batch(indptr, indices, data, np.array([0, 2, 2, 3, 4], np.int64),
                         np.array([5, 5, 3, 4], np.int32), rows, 0.1)
    with pytest.raises(ValueError, match="indptr"):
        core.predict(indptr[:-1], indices, data, 3, True)
    with pytest.raises(ValueError, match="learning rate"):
        core.train_batch(indptr, indices, data, yp, yi, rows, float("nan"))


def test_labels_as_lists_and_matrix_agree(net):
    X = _X()
    lists = [[3, 1, 3], [], [199], [0, 5]]
    Y = sp.csr_matrix((np.ones(5), ([0, 0, 2, 3, 3], [1, 3, 199, 0, 5])), shape=(4, 200))
    a = slide.Network(50, 200, hidden=(16,), lsh=None, threads=1, seed=2)
    b = slide.Network(50, 200, hidden=(16,), lsh=None, threads=1, seed=2)
    a.fit(X, lists, epochs=2, progress=False)
    b.fit(X, Y, epochs=2, progress=False)
    np.testing.assert_array_equal(a.weights()["layers.0.weight"], b.weights()["layers.0.weight"])
