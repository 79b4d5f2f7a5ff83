"""Exact (mode="dense") prediction against the oracle: NumPy scoring every output neuron in
float64 from the network's own weights. Output widths cross the GEMM's row slices, sample counts
cross its 32-sample blocks."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._inputs import as_features, as_labels

IN = 60


def _numpy_top_k(net, X, k):
    w = {name: v.astype(np.float64) for name, v in net.weights().items()}
    h = np.maximum(X.astype(np.float64) @ w["input.weight"] + w["input.bias.weight"][0], 0)
    for i in range(len(net.hidden) - 1):
        h = np.maximum(h @ w[f"layers.{i}.weight"].T + w[f"layers.{i}.bias"], 0)
    last = len(net.hidden) - 1
    z = h @ w[f"layers.{last}.weight"].T + w[f"layers.{last}.bias"]
    ids = np.argsort(-z, axis=1, kind="stable")[:, :k]
    return ids, np.take_along_axis(z, ids, axis=1)


@pytest.mark.parametrize("hidden, out, n", [((16,), 5000, 70), ((16, 12), 2049, 33), ((8,), 7, 1)])
def test_dense_predict_matches_numpy(hidden, out, n):
    rng = np.random.default_rng(out)
    X = as_features(sp.random(n + 200, IN, density=0.1, format="csr", dtype=np.float32, random_state=rng), IN)
    Y = as_labels([rng.choice(out, 2, replace=False) for _ in range(n + 200)], out, n + 200)
    net = slide.Network(IN, out, hidden=hidden, lsh=slide.LSHConfig(k=2, l=4), threads=2, seed=3, neighbours=0)
    net.fit(X[n:], Y[n:], epochs=1, batch_size=50, progress=False)  # weights off their initial values
    k = min(5, out)
    ids, scores = net.predict(X[:n], k=k)
    ref_ids, ref_scores = _numpy_top_k(net, X[:n], k)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-5)
    # ids agree except where two neurons' scores are within rounding of each other
    z_gap = np.abs(np.diff(ref_scores, axis=1)).min(axis=1) if k > 1 else np.full(n, np.inf)
    clear = z_gap > 1e-4
    assert clear.mean() > 0.8
    np.testing.assert_array_equal(ids[clear], ref_ids[clear])
