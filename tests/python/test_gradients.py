"""The dense layer is the exact oracle for the sampled one; the dense path passes finite differences."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._inputs import as_features, as_labels

IN, OUT = 40, 30


def _pair(hidden=(16,), sampled_hidden=False, seed=5):
    all_active = slide.LSHConfig(k=2, l=3, min_active=OUT)
    hidden_lsh = None
    if sampled_hidden:
        hidden_lsh = (None,) * (len(hidden) - 1) + (slide.LSHConfig(k=2, l=3, min_active=hidden[-1]),)
    kw = dict(hidden=hidden, threads=1, seed=seed)
    sampled = slide.Network(IN, OUT, lsh=all_active, hidden_lsh=hidden_lsh, **kw)
    dense = slide.Network(IN, OUT, lsh=None, **kw)
    return sampled, dense


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = as_features(sp.random(n, IN, density=6 / IN, format="csr", dtype=np.float32, random_state=rng), IN)
    Y = as_labels([np.sort(rng.choice(OUT, 2, replace=False)) for _ in range(n)], OUT, n)
    return X, Y


def _grads(net, X, Y):
    core = net._core
    core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, np.arange(X.shape[0], dtype=np.int64), 0.0,
                     apply=False)
    g = {k: v.copy() for k, v in net.weights().items() if k.endswith("_grad")}
    core.clear_gradients()
    return g


@pytest.mark.parametrize("hidden, sampled_hidden", [((16,), False), ((16, 12), True)])
def test_all_active_sampled_layer_equals_dense(hidden, sampled_hidden):
    sampled, dense = _pair(hidden, sampled_hidden)
    for name, w in dense.weights().items():
        if not name.endswith("_grad") and ".lsh." not in name:
            np.testing.assert_array_equal(w, sampled.weights()[name], err_msg=name)
    X, Y = _data()
    for row in range(X.shape[0]):
        ids, logits = sampled._core.output_activations(X.indptr, X.indices, X.data, Y.indptr, Y.indices, row, True)
        assert sorted(ids.tolist()) == list(range(OUT)), "every neuron must be active"
        dids, dlogits = dense._core.output_activations(X.indptr, X.indices, X.data, Y.indptr, Y.indices, row, True)
        np.testing.assert_array_equal(dids, np.arange(OUT))
        np.testing.assert_allclose(logits, dlogits[ids], rtol=1e-5, atol=1e-6)
    gs, gd = _grads(sampled, X, Y), _grads(dense, X, Y)
    assert set(gs) == set(gd)
    for name in gd:
        assert np.abs(gd[name]).max() > 0, f"{name}: no gradient at all"
        np.testing.assert_allclose(gs[name], gd[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_sampled_gradient_is_confined_to_the_active_set():
    net = slide.Network(IN, 2000, hidden=(16,), lsh=slide.LSHConfig(k=4, l=2, bucket_size=4), threads=1, seed=1)
    X, _ = _data()
    Y = as_labels([[3, 1999]] * X.shape[0], 2000, X.shape[0])
    g = _grads(net, X, Y)
    touched = np.flatnonzero(np.abs(g["layers.0.weight_grad"]).sum(axis=1))
    assert {3, 1999} <= set(touched.tolist())
    assert len(touched) < 2000 * 0.5, "a sampled layer must not compute every neuron"


@pytest.mark.parametrize("output_loss", ["softmax", "decoupled"])
def test_dense_gradient_matches_finite_differences(output_loss):
    """The gradients the batch trains with are those of the loss `mean_loss` reports, per sample."""
    net = slide.Network(IN, OUT, hidden=(16, 12), lsh=None, threads=1, seed=3, output_loss=output_loss)
    X, Y = _data(n=8, seed=3)
    n = X.shape[0]
    grads = _grads(net, X, Y)
    weights = net.weights()
    rng = np.random.default_rng(0)

    def loss():
        return net._core.mean_loss(X.indptr, X.indices, X.data, Y.indptr, Y.indices)

    checked = 0
    for name in ["layers.1.weight", "layers.1.bias", "layers.0.weight", "layers.0.bias", "input.weight",
                 "input.bias.weight"]:
        w, g = weights[name], grads[name + "_grad" if not name.endswith("bias") else name + "_grad"] / n
        for _ in range(6):
            idx = tuple(rng.integers(0, s) for s in w.shape)
            if name == "input.weight":  # pick a feature the batch uses, else the gradient is 0
                idx = (int(X.indices[rng.integers(0, X.nnz)]), idx[1])
            old = float(w[idx])
            numeric = []
            for h in (1e-3, 3e-4):  # a ReLU kink near the point can spoil one step size
                w[idx] = old + h
                up = loss()
                w[idx] = old - h
                down = loss()
                w[idx] = old
                numeric.append((up - down) / (2 * h))
            assert any(g[idx] == pytest.approx(v, rel=2e-2, abs=2e-4) for v in numeric), f"{name}{idx}: {g[idx]} vs {numeric}"
            checked += 1
    assert checked == 36


@pytest.mark.parametrize("output_loss", ["softmax", "decoupled"])
def test_loss_decreases_on_repeated_batches(output_loss):
    net = slide.Network(IN, OUT, hidden=(16,), lsh=None, threads=1, seed=0, learning_rate=1e-2,
                        output_loss=output_loss)
    X, Y = _data(n=32)
    before = net.loss(X, Y)
    net.fit(X, Y, epochs=30, batch_size=8, progress=False)
    assert net.loss(X, Y) < 0.5 * before


def test_decoupled_loss_is_the_softmax_for_one_label_and_frees_the_labels_of_each_other():
    """With one label per sample a label's only rivals are the negatives under both losses; with
    several, the softmax makes a sample's labels share one unit of probability and the decoupled
    loss does not, so its labels' logits are pushed up harder (a more negative gradient)."""
    X, _ = _data()
    one = as_labels([[i % OUT] for i in range(X.shape[0])], OUT, X.shape[0])
    nets = {loss: slide.Network(IN, OUT, hidden=(16,), lsh=None, threads=1, seed=4, output_loss=loss)
            for loss in ("softmax", "decoupled")}
    g1 = {loss: _grads(net, X, one) for loss, net in nets.items()}
    for name in g1["softmax"]:
        np.testing.assert_allclose(g1["decoupled"][name], g1["softmax"][name], rtol=1e-4, atol=1e-6, err_msg=name)
    many = as_labels([[0, 1, 2, 3]] * X.shape[0], OUT, X.shape[0])
    bias = {loss: _grads(net, X, many)["layers.0.bias_grad"] for loss, net in nets.items()}
    assert np.all(bias["decoupled"][:4] < bias["softmax"][:4] - 1e-3)
    assert np.all(bias["decoupled"][4:] > 0) and np.all(bias["softmax"][4:] > 0)


def test_the_output_loss_travels_with_the_model_and_older_files_train_the_softmax(tmp_path):
    net = slide.Network(IN, OUT, hidden=(16,), lsh=None, threads=1, seed=4, output_loss="decoupled")
    net.save(tmp_path / "model.npz")
    assert slide.Network.load(tmp_path / "model.npz").output_loss == "decoupled"
    older = {k: v for k, v in net.get_config().items() if k != "output_loss"}  # written before the setting
    assert slide.Network.from_config(older).output_loss == "softmax"
    with pytest.raises(ValueError, match="output_loss must be one of softmax, decoupled"):
        slide.Network(IN, OUT, output_loss="hinge")
