"""The run loop: an interrupt at any point leaves a checkpoint from which the run resumes exactly."""

import numpy as np
import pytest

import slide
from slide import runs
from slide.datasets import make_train_test
from slide.network import TrainingInterrupted


def _setup():
    train, test = make_train_test(2000, 300, 600, 1200, seed=9, avg_nnz=20, avg_labels=2)
    net = slide.Network(600, 1200, hidden=(32,), lsh=slide.LSHConfig(k=3, l=8, rehash_every=400), threads=1, seed=0)
    settings = runs.RunSettings(epochs=2, batch_size=64, eval_every=500, eval_samples=100, checkpoint_every=1e9,
                                progress=False)
    return net, train, test, settings


def test_interrupt_during_evaluation_checkpoints_and_resumes_bit_for_bit(tmp_path, monkeypatch):
    net, train, test, settings = _setup()
    (tmp_path / "a").mkdir()
    runs.run(net, runs.in_memory_stream(net, train, seed=0), test, tmp_path / "a", settings)
    reference = {k: v.copy() for k, v in net.weights().items()}

    net, train, test, settings = _setup()
    (tmp_path / "b").mkdir()
    calls = {"n": 0}
    original = slide.Network.evaluate

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(slide.Network, "evaluate", flaky)
    with pytest.raises(TrainingInterrupted):
        runs.run(net, runs.in_memory_stream(net, train, seed=0), test, tmp_path / "b", settings)
    monkeypatch.setattr(slide.Network, "evaluate", original)
    resumed, pos = runs.load_checkpoint(tmp_path / "b")
    assert 0 < pos.samples < 4000
    runs.run(resumed, runs.in_memory_stream(resumed, train, seed=0), test, tmp_path / "b", settings, pos)
    for name, w in reference.items():
        np.testing.assert_array_equal(resumed.weights()[name], w, err_msg=name)
