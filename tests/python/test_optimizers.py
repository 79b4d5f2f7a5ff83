"""Each optimizer is one component: named in the settings table, its state declared by the engine,
and every one trains, checkpoints and is estimated the same way."""

import numpy as np
import pytest

import slide
from slide import _core
from slide.optimizers import OPTIMIZERS, is_optimizer_state, state_names


def _problem():
    rng = np.random.default_rng(0)
    X = (rng.random((400, 60)) < 0.15).astype(np.float32)
    y = rng.integers(0, 30, 400)
    X[np.arange(400), y] = 3.0  # each class has a feature that names it
    return X, y


def test_the_tables_optimizers_are_the_engines():
    assert set(OPTIMIZERS) == set(_core.OptimizerKind.__members__)


def test_state_names():
    assert state_names("adam") == ["adam_m", "adam_v"]
    assert state_names("adagrad") == ["adagrad_sum"]
    assert state_names("sgd") == []


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_each_optimizer_keeps_exactly_its_declared_state(optimizer):
    net = slide.Network(60, 30, hidden=8, optimizer=optimizer, threads=1, mode="dense")
    state = sorted(k for k in net.weights() if is_optimizer_state(k))
    expected = sorted(f"{p}{s}" for p in ("input.", "input.bias.", "layers.0.") for s in state_names(optimizer))
    expected += sorted(f"layers.0.bias_{s}" for s in state_names(optimizer))
    assert state == sorted(expected)


@pytest.mark.parametrize("optimizer, lr", [("adam", 1e-2), ("adagrad", 5e-2), ("sgd", 1.0)])
@pytest.mark.parametrize("mode", ["dense", "batch", "sample"])
def test_each_optimizer_learns_a_separable_problem(optimizer, lr, mode):
    X, y = _problem()
    net = slide.Network(60, 30, hidden=32, optimizer=optimizer, learning_rate=lr, mode=mode, threads=1, seed=0)
    history = net.fit(X, y, epochs=15, batch_size=32, progress=False)
    assert history[-1]["loss"] < 0.7 * history[0]["loss"]
    assert net.evaluate(X, y)["P@1"] > 0.5


def test_adagrad_accumulates_squared_gradients_and_never_forgets():
    X, y = _problem()
    net = slide.Network(60, 30, hidden=8, optimizer="adagrad", learning_rate=1e-2, mode="dense", threads=1)
    net.fit(X, y, epochs=1, batch_size=32, progress=False)
    first = net.weights()["layers.0.adagrad_sum"].copy()
    assert (first >= 0).all() and first.any()
    net.fit(X, y, epochs=1, batch_size=32, progress=False)
    assert (net.weights()["layers.0.adagrad_sum"] >= first).all()


def test_memory_estimate_counts_each_optimizers_state():
    sizes = {o: slide.Network(1000, 5000, hidden=64, optimizer=o, threads=1, mode="dense").memory_estimate["parameters"]
             for o in OPTIMIZERS}
    assert sizes["sgd"] < sizes["adagrad"] < sizes["adam"]
    # weight + gradient + state arrays: 2, 3 and 4 copies of the same matrices
    assert sizes["adagrad"] - sizes["sgd"] == pytest.approx(sizes["adam"] - sizes["adagrad"], rel=0.01)


def test_an_unknown_optimizer_is_a_value_error_naming_the_choices():
    with pytest.raises(ValueError, match="optimizer must be one of adam, adagrad, sgd"):
        slide.Network(60, 30, optimizer="rmsprop")
