"""A batch-shared sampled output layer's gradient accumulators wait for their first use
(cpp/nn/network_config.h, defers_output_gradients): in one process each active row steps from the
batch's gathered gradient, so the layer never holds the rows x hidden floats (686 MB at 670,091 x
256) it would not read. Whatever does accumulate (gradients without a step, slide.torch's batches
summed before a step) allocates them at its first batch; under MPI, where every batch does, they are
there from the start."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide

IN, OUT, H = 300, 5_000, 40
PADDED = 48  # rows are padded to 16 floats
ACCUMULATORS = OUT * PADDED * 4


def _data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, IN, density=0.05, format="csr", dtype=np.float32, random_state=seed)
    Y = sp.csr_matrix((np.ones(n, np.float32), (np.arange(n), rng.integers(0, OUT, n))), shape=(n, OUT))
    return X, Y


def _gradients_without_a_step(net, X, Y):
    rows = np.arange(X.shape[0], dtype=np.int64)
    net._core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, rows, 0.0, apply=False)


def test_training_in_one_process_never_allocates_the_output_layers_accumulators():
    net = slide.Network(IN, OUT, hidden=(H,), mode="batch", threads=2, seed=0)
    held = net.memory_bytes
    grad = net.weights()["layers.0.weight_grad"]
    assert grad.shape == (OUT, H) and not grad.flags.writeable and not grad.any()
    X, Y = _data()
    before = net.weights()["layers.0.weight"].copy()
    history = net.fit(X, Y, epochs=3, batch_size=64, progress=False)
    losses = [epoch["loss"] for epoch in history.epochs]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    assert set(np.flatnonzero((net.weights()["layers.0.weight"] != before).any(axis=1))) >= set(Y.indices.tolist())
    assert net.memory_bytes == held
    assert not net.weights()["layers.0.weight_grad"].flags.writeable
    estimate = net.memory_estimate
    assert held <= estimate["parameters"] + estimate["lsh"] <= held * 1.02 + (1 << 20)


def test_gradients_without_a_step_allocate_them_once():
    net = slide.Network(IN, OUT, hidden=(H,), mode="batch", threads=2, seed=0)
    held = net.memory_bytes
    X, Y = _data()
    _gradients_without_a_step(net, X, Y)
    assert net.memory_bytes == held + ACCUMULATORS
    grad = net.weights()["layers.0.weight_grad"]
    assert grad.flags.writeable and set(np.flatnonzero(np.abs(grad).sum(axis=1))) >= set(Y.indices.tolist())
    net._core.clear_gradients()
    _gradients_without_a_step(net, X, Y)
    assert net.memory_bytes == held + ACCUMULATORS


@pytest.mark.parametrize("mode", ["sample", "dense"])
def test_other_modes_hold_their_accumulators_from_the_start(mode):
    net = slide.Network(IN, OUT, hidden=(H,), mode=mode, threads=2, seed=0)
    grad = net.weights()["layers.0.weight_grad"]
    assert grad.flags.writeable and grad.strides == (PADDED * 4, 4)
    held = net.memory_bytes
    X, Y = _data()
    _gradients_without_a_step(net, X, Y)
    assert net.memory_bytes == held
