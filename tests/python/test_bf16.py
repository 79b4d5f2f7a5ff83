"""precision="bf16": training reads BF16 weight copies that follow the fp32 master weights."""

import numpy as np
import pytest

import slide
from slide import _core
from slide.datasets import make_train_test


@pytest.fixture(scope="module")
def problem():
    return make_train_test(4000, 1000, 1000, 2000, seed=2, avg_nnz=30, avg_labels=2)


def _net(precision, **kw):
    return slide.Network(1000, 2000, hidden=(64,), lsh=slide.LSHConfig(k=3, l=20), precision=precision, threads=1,
                         seed=0, **kw)


def _bf16(w: np.ndarray) -> np.ndarray:
    return _core._kernel_from_bf16("scalar", _core._kernel_to_bf16("scalar", np.ascontiguousarray(w).ravel())).reshape(w.shape)


def test_bf16_trains_to_the_fp32_band(problem):
    train, test = problem
    p1 = {}
    for precision in ("fp32", "bf16"):
        net = _net(precision)
        net.fit(train.X, train.Y, epochs=3, batch_size=64, progress=False)
        p1[precision] = net.evaluate(test.X, test.Y)["P@1"]
    assert p1["fp32"] > 0.2 and abs(p1["bf16"] - p1["fp32"]) <= 0.02, p1


def test_bf16_logits_are_the_fp32_logits_of_rounded_weights(problem):
    """Sparse inference reads the BF16 copies; with every output active it must equal a forward
    pass computed by hand from the rounded weights and rounded hidden activations."""
    train, _ = problem
    net = slide.Network(1000, 2000, hidden=(16,), precision="bf16", threads=1, seed=0)
    net.fit(train.X[:500], train.Y[:500], epochs=1, batch_size=50, progress=False)  # weights off the init grid
    data = net.prepare(train.X[:5], train.Y[:5])
    X = data.X.astype(np.float64)
    w = net.weights()
    h = np.maximum(X @ _bf16(w["input.weight"]) + w["input.bias.weight"][0], 0)
    logits = _bf16(h.astype(np.float32)) @ _bf16(w["layers.0.weight"]).T + w["layers.0.bias"]
    for i in range(5):
        ids, vals = net._core.output_activations(data.X.indptr, data.X.indices, data.X.data, data.Y.indptr,
                                                 data.Y.indices, i, False)
        np.testing.assert_allclose(vals, logits[i, ids], rtol=1e-4, atol=1e-4)
        # and they differ from the fp32 logits by bf16 rounding, not by nothing
        exact = np.maximum(X[i] @ w["input.weight"] + w["input.bias.weight"][0], 0) @ w["layers.0.weight"].T
    assert np.abs(exact + w["layers.0.bias"] - logits[4]).max() > 1e-6


def test_bf16_copies_follow_updates_and_loading(problem, tmp_path):
    train, test = problem
    net = _net("bf16")
    net.fit(train.X, train.Y, epochs=1, batch_size=64, progress=False)
    net.save(tmp_path / "m.npz")
    loaded = slide.Network.load(tmp_path / "m.npz")
    assert loaded.precision == "bf16"
    for mode in ("dense", "sparse"):
        a, b = net.predict(test.X[:200], k=5, mode=mode), loaded.predict(test.X[:200], k=5, mode=mode)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_precision_is_validated():
    with pytest.raises(ValueError, match="precision"):
        slide.Network(10, 10, precision="fp8")


def test_batch_shared_bf16_reads_rounded_output_weights(problem):
    """The batch-shared GEMM path reads the output layer's BF16 copies too: its loss is the loss of
    the fp32 hidden activations against the rounded weights, not against the fp32 ones."""
    train, _ = problem
    lsh = slide.LSHConfig(k=3, l=20, batch_active=2000, min_active=2000)  # every output in the shared set
    net = slide.Network(1000, 2000, hidden=(16,), lsh=lsh, precision="bf16", threads=1, seed=0)
    net.fit(train.X[:500], train.Y[:500], epochs=1, batch_size=50, progress=False)
    data = net.prepare(train.X[:20], train.Y[:20])
    w = net.weights()
    X = data.X.astype(np.float64)
    h = np.maximum(X @ _bf16(w["input.weight"]) + w["input.bias.weight"][0], 0)

    def loss(W):
        z = h @ W.T + w["layers.0.bias"]
        log_p = z - z.max(axis=1, keepdims=True)
        log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
        return sum(-log_p[i, data.Y.indices[data.Y.indptr[i]:data.Y.indptr[i + 1]]].mean() for i in range(20))

    stats = net._core.train_batch(data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices,
                                  np.arange(20, dtype=np.int64), 0.0, apply=False)
    rounded, exact = loss(_bf16(w["layers.0.weight"])), loss(w["layers.0.weight"])
    assert abs(stats["loss"] - rounded) < 0.1 * abs(exact - rounded), (stats["loss"], rounded, exact)
