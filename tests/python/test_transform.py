"""transform(X) is the top hidden layer that the output layer scores; embeddings() the input table."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide


def _reference_hidden(net, X):
    w = net.weights()
    h = np.maximum(X.astype(np.float64) @ w["input.weight"] + w["input.bias.weight"][0], 0)
    for i in range(len(net.hidden) - 1):
        h = np.maximum(h @ w[f"layers.{i}.weight"].T.astype(np.float64) + w[f"layers.{i}.bias"], 0)
    return h


@pytest.mark.parametrize("hidden, lsh", [((24,), None), ((24,), slide.LSHConfig(k=2, l=4)), ((24, 12), None),
                                         ((24, 12), slide.LSHConfig(k=2, l=4, batch_active=20))])
@pytest.mark.parametrize("threads", [1, 2])
def test_transform_matches_a_numpy_forward_pass(hidden, lsh, threads):
    X = sp.random(37, 60, density=0.2, format="csr", dtype=np.float32, random_state=1)
    Y = [[i % 40] for i in range(37)]
    net = slide.Network(60, 40, hidden=hidden, lsh=lsh, threads=threads, seed=3)
    net.fit(X, Y, epochs=2, progress=False)  # trained weights and biases, not the initial ones
    got = net.transform(X)
    assert got.shape == (37, hidden[-1]) and got.dtype == np.float32
    np.testing.assert_allclose(got, _reference_hidden(net, X), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(net.transform(X[5:9]), got[5:9])  # row by row, whatever the batch


def test_embeddings_are_a_copy_of_the_input_table():
    net = slide.Network(60, 40, hidden=(8,), lsh=None, threads=1)
    e = net.embeddings()
    assert e.shape == (60, 8)
    e[:] = 0
    assert np.any(net.weights()["input.weight"] != 0)


def test_transform_validates_its_input():
    net = slide.Network(60, 40, hidden=(8,), lsh=None, threads=1)
    with pytest.raises(ValueError, match="columns, expected input_dim=60"):
        net.transform(sp.random(3, 61, format="csr"))


@pytest.mark.parametrize("lsh", [None, slide.LSHConfig(k=2, l=4)])
def test_predict_proba_is_the_softmax_over_every_output(lsh):
    # 5,000 outputs: more than one 2,048-row slice; 70 samples: more than one 32-sample block
    X = sp.random(70, 60, density=0.2, format="csr", dtype=np.float32, random_state=2)
    net = slide.Network(60, 5000, hidden=(16,), lsh=lsh, threads=2, seed=4, neighbours=0)  # the network's own softmax
    net.fit(X, [[i * 71 % 5000] for i in range(70)], epochs=3, progress=False)
    w = net.weights()
    logits = net.transform(X).astype(np.float64) @ w["layers.0.weight"].T + w["layers.0.bias"]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ids, probs = net.predict_proba(X, k=4)
    np.testing.assert_array_equal(ids, net.predict(X, k=4)[0])
    np.testing.assert_allclose(probs, np.take_along_axis(p, ids, axis=1), rtol=1e-4)
    _, everything = net.predict_proba(X[:3], k=5000)
    np.testing.assert_allclose(everything.sum(axis=1), 1.0, rtol=1e-4)
    with pytest.raises(ValueError, match="k must be <= 5,000"):
        net.predict_proba(X, k=5001)
