"""The batch-shared output layer (lsh.batch_active > 0) and the dense output layer train as matrix
products over the batch. Oracles: the per-sample path with every neuron active, and a float64 NumPy
forward/backward; plus the shared set's contents and the validation of the option."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._inputs import as_features, as_labels

IN, OUT = 40, 30


def _data(n=12, out=OUT, labels=2, seed=0):
    rng = np.random.default_rng(seed)
    X = as_features(sp.random(n, IN, density=6 / IN, format="csr", dtype=np.float32, random_state=rng), IN)
    Y = as_labels([np.sort(rng.choice(out, labels, replace=False)) for _ in range(n)], out, n)
    return X, Y


def _grads(net, X, Y, rows=None):
    rows = np.arange(X.shape[0], dtype=np.int64) if rows is None else rows
    stats = net._core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, rows, 0.0, apply=False)
    g = {k: v.copy() for k, v in net.weights().items() if k.endswith("_grad")}
    net._core.clear_gradients()
    return g, stats


@pytest.mark.parametrize("hidden, output_loss", [((16,), "softmax"), ((16, 12), "softmax"), ((16,), "decoupled")])
def test_all_active_shared_batch_equals_per_sample(hidden, output_loss):
    """With every neuron in the shared set, the GEMM path computes what SLIDE's per-sample path
    computes with every neuron active; (16, 12) also re-runs the hidden layers for the backward."""
    kw = dict(hidden=hidden, threads=1, seed=5, output_loss=output_loss)
    per_sample = slide.Network(IN, OUT, lsh=slide.LSHConfig(k=2, l=3, min_active=OUT), **kw)
    shared = slide.Network(IN, OUT, lsh=slide.LSHConfig(k=2, l=3, min_active=OUT, batch_active=OUT), **kw)
    X, Y = _data()
    (gp, sp_stats), (gs, sh_stats) = _grads(per_sample, X, Y), _grads(shared, X, Y)
    assert sp_stats["loss"] == pytest.approx(sh_stats["loss"], rel=1e-5)
    assert sh_stats["active"] == OUT * X.shape[0]
    for name in gp:
        assert np.abs(gp[name]).max() > 0, f"{name}: no gradient at all"
        np.testing.assert_allclose(gs[name], gp[name], rtol=1e-4, atol=1e-6, err_msg=name)


def _numpy_gradients(net, X, Y, output_loss="softmax"):
    """Full-softmax (or decoupled: each label against the non-labels) forward and backward in
    float64 from the network's own weights."""
    w = {k: v.astype(np.float64) for k, v in net.weights().items()}
    emb, b0 = w["input.weight"], w["input.bias.weight"].ravel()
    W, b = w["layers.0.weight"], w["layers.0.bias"]
    pre = X.astype(np.float64) @ emb + b0
    h = np.maximum(pre, 0)
    z = h @ W.T + b
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    target = np.zeros_like(p)
    for i in range(X.shape[0]):
        labels = Y.indices[Y.indptr[i]:Y.indptr[i + 1]]
        target[i, labels] = 1.0 / len(labels)
    G = p - target
    loss = -(target * np.log(p)).sum()
    if output_loss == "decoupled":
        e = np.exp(z - z.max(axis=1, keepdims=True))
        is_label = target > 0
        negatives = np.where(is_label, 0.0, e).sum(axis=1, keepdims=True)
        own = np.where(is_label, e / (e + negatives), 1.0)  # each label's probability against the non-labels
        share = target.max(axis=1, keepdims=True)          # 1 / |labels|
        scale = share * np.where(is_label, 1.0 / (e + negatives), 0.0).sum(axis=1, keepdims=True)
        G = np.where(is_label, share * (own - 1.0), e * scale)
        loss = -(np.where(is_label, share * np.log(own), 0.0)).sum()
    dh = (G @ W) * (pre > 0)
    return {"layers.0.weight_grad": G.T @ h, "layers.0.bias_grad": G.sum(axis=0),
            "input.bias.weight_grad": dh.sum(axis=0)[None, :]}, loss


@pytest.mark.parametrize("threads, output_loss", [(1, "softmax"), (2, "softmax"), (1, "decoupled"), (2, "decoupled")])
def test_dense_output_wider_than_a_chunk_matches_numpy(threads, output_loss):
    """20,000 outputs are three 8,192-neuron chunks: an online-softmax pass, then the logits are
    recomputed chunk by chunk for the gradient (a label's decoupled term needs its logit from
    whichever chunk holds it). The output layer's gradients are race-free with any number of
    threads; the embedding's shared bias row is HOGWILD, so it is checked with one."""
    out = 20_000
    net = slide.Network(IN, out, hidden=(8,), lsh=None, threads=threads, seed=3, output_loss=output_loss)
    X, Y = _data(n=40, out=out, labels=3)
    g, stats = _grads(net, X, Y)
    ref, loss = _numpy_gradients(net, X, Y, output_loss)
    assert stats["loss"] == pytest.approx(loss, rel=1e-4)
    if threads > 1:
        del ref["input.bias.weight_grad"]
    for name, r in ref.items():
        got = g[name].reshape(r.shape) if g[name].size == r.size else g[name][:, :r.shape[1]]
        np.testing.assert_allclose(got, r, rtol=2e-3, atol=2e-6, err_msg=name)


def test_shared_set_is_the_labels_plus_capped_candidates():
    out = 5000
    lsh = slide.LSHConfig(k=2, l=8, range_bits=4, batch_active=100)  # few, crowded buckets
    net = slide.Network(IN, out, hidden=(16,), lsh=lsh, threads=2, seed=1)
    X, Y = _data(n=64, out=out, labels=3)
    g, stats = _grads(net, X, Y)
    labels = set(Y.indices.tolist())
    touched = set(np.flatnonzero(np.abs(g["layers.0.weight_grad"]).sum(axis=1)).tolist())
    assert labels <= touched, "every label of the batch must be in the shared set"
    per_sample = stats["active"] / stats["samples"]
    assert per_sample == len(labels) + 100, "the tables return far more than 100 candidates; the cap must hold"
    assert stats["retrieved"] / stats["samples"] > 100
    assert len(touched) == per_sample  # every shared neuron gets gradient from every sample


@pytest.mark.filterwarnings("ignore:threads=3 is more than:RuntimeWarning")  # 3 threads on purpose
def test_threads_count_the_tables_apart_and_agree_with_one_thread():
    """Each thread counts its share of the tables; the merged counts must pick exactly the
    candidates one thread picks (the cap cuts through ties of counts, so a lost count shows)."""
    out = 5000
    lsh = slide.LSHConfig(k=2, l=9, range_bits=4, batch_active=150)
    X, Y = _data(n=64, out=out, labels=3)
    chosen = []
    for threads in (1, 2, 3):
        net = slide.Network(IN, out, hidden=(16,), lsh=lsh, threads=threads, seed=1)
        g, stats = _grads(net, X, Y)
        chosen.append((set(np.flatnonzero(np.abs(g["layers.0.weight_grad"]).sum(axis=1)).tolist()),
                       stats["retrieved"], stats["active"]))
    assert chosen[0][1] > 150 * 64, "the tables must retrieve more than the cap keeps"
    assert chosen[1] == chosen[0] and chosen[2] == chosen[0]


def test_shared_set_tops_up_to_min_active():
    out = 5000
    net = slide.Network(IN, out, hidden=(16,), lsh=slide.LSHConfig(k=6, l=2, batch_active=10, min_active=1500),
                        threads=1, seed=1)
    X, Y = _data(n=16, out=out)
    _, stats = _grads(net, X, Y)
    assert stats["active"] / stats["samples"] == 1500


def test_shared_batches_train_and_are_reproducible(small_problem):
    train, test = small_problem
    lsh = slide.LSHConfig(k=3, l=50, rehash_every=2000, rebuild_every=20000, batch_active=256)

    def run():
        net = slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(128,), lsh=lsh, threads=1, seed=0)
        history = net.fit(train.X, train.Y, epochs=5, batch_size=128, progress=False)
        return net, history

    net, history = run()
    p1 = net.evaluate(test.X, test.Y)["P@1"]
    assert p1 >= 0.85, f"batch-shared P@1 {p1:.4f}"  # 0.94 when written; dense reaches the same band
    assert history[-1]["loss"] < history[0]["loss"]
    assert history[-1]["active_per_sample"] < 0.5 * train.Y.shape[1], "the shared set must stay sparse"
    again, _ = run()
    for name, w in net.weights().items():
        np.testing.assert_array_equal(w, again.weights()[name], err_msg=name)


def test_batch_active_is_validated():
    with pytest.raises(ValueError, match="batch_active must be >= 0"):
        slide.Network(IN, OUT, hidden=(16,), lsh=slide.LSHConfig(batch_active=-1), threads=1)
    with pytest.raises(ValueError, match="output layer only"):
        slide.Network(IN, OUT, hidden=(16, 12), hidden_lsh=(None, slide.LSHConfig(k=2, l=2, batch_active=5)),
                      threads=1)
    with pytest.raises(ValueError, match="dense hidden layers"):
        slide.Network(IN, OUT, hidden=(16, 12), hidden_lsh=(None, slide.LSHConfig(k=2, l=2)),
                      lsh=slide.LSHConfig(k=2, l=2, batch_active=5), threads=1)
