"""scan="bf16": the dense top-k from BF16 products (weights and activations rounded, fp32 sums), the
one scan that is not exact. The re-ranker's training lists use it under matmul="bf16"; where the
CPU has no AVX-512 BF16 it is the exact scan."""

import numpy as np
import pytest

import slide
from slide.datasets import make_train_test
from slide.prediction.reranker_training import list_scan, shortlists

from .test_bf16_matmul import NATIVE, _bf16, needs_native, run_under_avx2


@pytest.fixture(scope="module")
def problem():
    return make_train_test(300, 150, 200, 1500, seed=9, avg_nnz=12, avg_labels=2)


def _network(matmul="bf16", outputs=1500, hidden=33):
    """A dense network whose output layer holds continuous random values (ties improbable), over
    three 512-row passes, with an odd hidden width (a zero-padded BF16 pair)."""
    net = slide.Network(200, outputs, hidden=(hidden,), mode="dense", matmul=matmul, threads=2, seed=1)
    rng = np.random.default_rng(4)
    w = net.weights()
    w["layers.0.weight"][...] = rng.standard_normal(w["layers.0.weight"].shape).astype(np.float32)
    w["layers.0.bias"][...] = rng.standard_normal(w["layers.0.bias"].shape).astype(np.float32)
    w["input.weight"][...] = np.abs(rng.standard_normal(w["input.weight"].shape)).astype(np.float32)
    return net


def _scores(net, X, rounded):
    H = net._core.hidden(X.indptr, X.indices, X.data).astype(np.float64)
    W = net.weights()["layers.0.weight"].astype(np.float64)
    if rounded:
        H, W = _bf16(H), _bf16(W)
    return H @ W.T + net.weights()["layers.0.bias"]


@needs_native
@pytest.mark.parametrize("k", [1, 7, 100])
def test_bf16_scan_is_the_top_k_of_the_bf16_products(problem, k):
    """Its ids are the k best of the products of the BF16-rounded weights and activations, its
    scores those products (fp32 sums in another order), and they are not the fp32 scores."""
    X = problem[1].X.tocsr()
    net = _network()
    ids, scores = net._core.predict(X.indptr, X.indices, X.data, k, True, scan="bf16")
    want = _scores(net, X, rounded=True)
    np.testing.assert_allclose(scores, np.take_along_axis(want, ids, axis=1), rtol=1e-5, atol=1e-4)
    assert (np.diff(scores, axis=1) <= 0).all()
    outside = want.copy()
    np.put_along_axis(outside, ids, -np.inf, axis=1)
    assert (scores[:, -1] >= outside.max(axis=1) - 1e-4).all()  # nothing left out scores higher
    exact = np.take_along_axis(_scores(net, X, rounded=False), ids, axis=1)
    assert not np.allclose(scores, exact, rtol=1e-6, atol=0)


@needs_native
def test_bf16_scan_rounds_the_weights_as_they_are_at_each_scan(problem):
    """The network keeps the rounded weights between scans (a new buffer each scan cost its pages'
    first touch); each scan rounds them again, so one after the weights change sees the new ones."""
    X = problem[1].X.tocsr()
    net = _network()
    first, _ = net._core.predict(X.indptr, X.indices, X.data, 5, True, scan="bf16")
    w = net.weights()
    w["layers.0.weight"][...] = -w["layers.0.weight"]
    net._core.sync_low_precision()
    ids, scores = net._core.predict(X.indptr, X.indices, X.data, 5, True, scan="bf16")
    want = _scores(net, X, rounded=True)
    np.testing.assert_allclose(scores, np.take_along_axis(want, ids, axis=1), rtol=1e-5, atol=1e-4)
    assert not np.array_equal(ids, first)


def test_bf16_scan_is_refused_with_the_normaliser_and_named_when_unknown(problem):
    X = problem[1].X.tocsr()
    net = _network()
    with pytest.raises(ValueError, match="normaliser needs the fp32 scan, got scan='bf16'"):
        net._core.predict(X.indptr, X.indices, X.data, 3, True, True, scan="bf16")
    with pytest.raises(ValueError, match="scan must be 'auto', 'fp32', 'int8' or 'bf16', got 'int4'"):
        net._core.predict(X.indptr, X.indices, X.data, 3, True, scan="int4")


def test_bf16_scan_is_the_exact_scan_on_a_cpu_without_bf16():
    """Under SLIDE_SIMD=avx2 scan="bf16" returns the exact scan's ids and scores, bit for bit."""
    code = ("import numpy as np, slide\n"
            "from slide.datasets import make_train_test\n"
            "tr, _ = make_train_test(200, 10, 100, 700, seed=2, avg_nnz=8, avg_labels=2)\n"
            "net = slide.Network(100, 700, hidden=(17,), mode='dense', threads=1, seed=0)\n"
            "net.fit(tr.X, tr.Y, epochs=1, batch_size=32, progress=False)\n"
            "X = tr.X.tocsr()\n"
            "a = net._core.predict(X.indptr, X.indices, X.data, 9, True, scan='bf16')\n"
            "b = net._core.predict(X.indptr, X.indices, X.data, 9, True, scan='fp32')\n"
            "print(slide.simd_level(), bool((a[0] == b[0]).all() and (a[1] == b[1]).all()))\n")
    assert run_under_avx2(code) == ["avx2", "True"]


@pytest.mark.parametrize("matmul,scan", [("bf16", "bf16"), ("fp32", "auto")])
def test_the_rerankers_training_lists_are_ranked_with_the_training_products(problem, matmul, scan):
    """The lists shortlists() returns, in one call and in pieces under a progress display, are the
    scan's that matmul names: BF16 products under "bf16" (where native), exact under "fp32"."""
    X = problem[0].X.tocsr()
    net = _network(matmul)
    assert list_scan(net) == scan
    want = net._core.predict(X.indptr, X.indices, X.data, 20, True, scan=scan)[0]
    np.testing.assert_array_equal(shortlists(net, X, 20), want)
    np.testing.assert_array_equal(shortlists(net, X, 20, progress=True), want)
    if NATIVE and matmul == "bf16":  # the BF16 lists differ from the exact ones somewhere
        assert (want != net._core.predict(X.indptr, X.indices, X.data, 20, True, scan="fp32")[0]).any()


@pytest.mark.parametrize("matmul,found", [
    ("fp32", "found by an exact scan of its 1,500 outputs)"),
    ("bf16", "found by a scan of its 1,500 outputs with BF16 products where the CPU has AVX-512 BF16)")])
def test_the_run_says_how_the_training_lists_are_ranked(problem, matmul, found):
    from slide.runs.loop import _after_training

    net = slide.Network(200, 1500, hidden=(8,), mode="dense", matmul=matmul, rerank=5, neighbours=0, threads=1)
    assert _after_training(net, problem[0]).endswith(found)
