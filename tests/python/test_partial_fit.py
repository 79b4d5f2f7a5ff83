"""Training in several calls: partial_fit, one learning-rate schedule across calls, and the
callback protocol (slide.callbacks)."""

import numpy as np
import pytest

import slide
from slide.callbacks import Callback


def _problem(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, 60)) < 0.15).astype(np.float32)
    y = rng.integers(0, 30, n)
    X[np.arange(n), y] = 3.0
    return X, y


def _net(**kw):
    return slide.Network(60, 30, hidden=16, threads=1, seed=0, learning_rate=1e-2, **kw)


def test_partial_fit_in_pieces_equals_one_unshuffled_epoch():
    X, y = _problem()
    whole = _net()
    whole.fit(X, y, epochs=1, batch_size=50, shuffle=False, progress=False)
    pieces = _net()
    for start in range(0, 600, 200):  # 200 is a multiple of the batch: the same batches
        assert pieces.partial_fit(X[start:start + 200], y[start:start + 200], batch_size=50) is pieces
    for name, w in whole.weights().items():
        np.testing.assert_array_equal(w, pieces.weights()[name], err_msg=name)


def test_partial_fit_learns():
    X, y = _problem()
    net = _net()
    before = net.loss(X, y)
    for _ in range(10):
        net.partial_fit(X, y, batch_size=32)
    assert net.loss(X, y) < 0.5 * before and net.evaluate(X, y)["P@1"] > 0.5


class Recorder(Callback):
    def __init__(self, stop_after=None):
        self.events, self.rates, self.steps, self.stop_after = [], [], [], stop_after

    def on_train_begin(self, net):
        self.events.append("begin")

    def on_batch_end(self, net, step, logs):
        self.steps.append(step)
        self.rates.append(logs["learning_rate"])
        assert np.isfinite(logs["loss"]) and logs["samples"] > 0

    def on_epoch_end(self, net, epoch, logs):
        self.events.append(f"epoch {epoch}")
        return False if self.stop_after == epoch else None

    def on_train_end(self, net, history):
        self.events.append("end")


def test_callbacks_see_every_batch_and_epoch_and_can_stop():
    X, y = _problem()
    rec = Recorder(stop_after=2)
    history = _net().fit(X, y, epochs=5, batch_size=100, progress=False, callbacks=[rec])
    assert rec.events == ["begin", "epoch 1", "epoch 2", "end"] and len(history) == 2
    assert rec.steps == list(range(1, 13))  # 6 batches per epoch, steps counted by the network


def test_a_schedule_over_lr_schedule_steps_continues_across_calls():
    X, y = _problem()
    straight, split = Recorder(), Recorder()
    one = _net(lr_schedule="linear", lr_schedule_steps=12)
    one.fit(X, y, epochs=2, batch_size=100, progress=False, callbacks=[straight])
    two = _net(lr_schedule="linear", lr_schedule_steps=12)
    two.fit(X, y, epochs=1, batch_size=100, progress=False, callbacks=[split])
    two.fit(X, y, epochs=1, batch_size=100, progress=False, callbacks=[split])
    np.testing.assert_allclose(split.rates, straight.rates)
    assert straight.rates[0] == pytest.approx(1e-2) and straight.rates[-1] < 0.2e-2
    restarted = Recorder()  # without lr_schedule_steps every fit call decays over its own steps
    three = _net(lr_schedule="linear")
    three.fit(X, y, epochs=1, batch_size=100, progress=False)
    three.fit(X, y, epochs=1, batch_size=100, progress=False, callbacks=[restarted])
    assert restarted.rates[0] == pytest.approx(1e-2)


def test_the_schedule_length_survives_save_and_load(tmp_path):
    X, y = _problem()
    net = _net(lr_schedule="cosine", lr_schedule_steps=30)
    net.partial_fit(X, y, batch_size=100)
    net.save(tmp_path / "m.npz")
    loaded = slide.Network.load(tmp_path / "m.npz")
    assert loaded.lr_schedule_steps == 30
    a, b = Recorder(), Recorder()
    net.partial_fit(X, y, batch_size=100, callbacks=[a])
    loaded.partial_fit(X, y, batch_size=100, callbacks=[b])
    assert a.rates == b.rates and a.rates[0] < 1e-2


def test_partial_fit_refuses_a_decaying_schedule_without_its_length():
    X, y = _problem()
    with pytest.raises(ValueError, match="needs lr_schedule_steps"):
        _net(lr_schedule="cosine").partial_fit(X, y)
    with pytest.raises(ValueError, match="lr_schedule_steps must be >= 1"):
        _net(lr_schedule_steps=0)


def test_a_callback_without_hooks_is_a_value_error():
    X, y = _problem()
    with pytest.raises(ValueError, match="has none of the hooks"):
        _net().fit(X, y, progress=False, callbacks=[object()])
