"""Divergence: a NaN/inf in the loss or in any parameter is caught in the batch where it appears;
the run loop never overwrites its last good checkpoint with a diverged model, and can back off."""

import os
import subprocess
import sys

import numpy as np
import pytest

import slide
from slide import runs
from slide.datasets import make_train_test
from slide.network import TrainingDiverged


def _problem(optimizer="sgd", lr=1e30, lsh=True):
    train, test = make_train_test(1500, 200, 500, 800, seed=4, avg_nnz=15, avg_labels=2)
    net = slide.Network(500, 800, hidden=(16,), lsh=slide.LSHConfig(k=3, l=6) if lsh else None,
                        optimizer=optimizer, learning_rate=lr, threads=1, seed=0)
    return net, train, test


def _nonfinite(net):
    return sorted(k for k, w in net.weights().items() if w.dtype.kind == "f" and not np.isfinite(w).all())


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("lsh", [True, False])
def test_the_batch_that_first_makes_a_parameter_nonfinite_is_the_one_flagged(optimizer, lsh):
    net, train, _ = _problem(optimizer, lr=1e25 if optimizer == "sgd" else 1e36, lsh=lsh)
    data = net.prepare(train.X, train.Y)
    arrays = (data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices)
    for b in range(0, len(data), 32):
        stats = net._core.train_batch(*arrays, np.arange(b, min(b + 32, len(data)), dtype=np.int64),
                                      net.learning_rate)
        bad = _nonfinite(net)
        flagged = stats["nonfinite_rows"] > 0 or not np.isfinite(stats["loss"])
        assert flagged == bool(bad), (b, bad, stats)
        if flagged:
            return
    pytest.fail("a learning rate of 1e25+ never diverged; the test no longer exercises anything")


def test_fit_raises_in_the_diverging_batch_with_a_clear_message():
    net, train, _ = _problem()
    with pytest.raises(TrainingDiverged, match=r"training diverged at step \d+: .*learning rate 1e\+30"):
        net.fit(train.X, train.Y, epochs=3, batch_size=32, progress=False)
    assert net.table_stats()["step"] < 10  # caught early, not at the end of the run


def test_healthy_training_never_flags():
    net, train, test = _problem(optimizer="adam", lr=1e-2)
    history = net.fit(train.X, train.Y, epochs=2, batch_size=32, progress=False)
    assert np.isfinite(history[-1]["loss"]) and not _nonfinite(net)


def _poison_after(monkeypatch, calls_before: int, clean_below: float):
    """Make train_rows use a diverging learning rate from its `calls_before`+1-th call on, while
    the rate is still at least `clean_below` (so a backed-off rate trains normally)."""
    original = slide.Network.train_rows
    calls = {"n": 0}

    def poisoned(self, data, rows, *, batch_size, lr, bar=None):
        calls["n"] += 1
        rate = lr(0) if callable(lr) else lr  # train_rows takes a rate or a function of the batch index
        if calls["n"] > calls_before and rate >= clean_below:
            lr = 1e36
        return original(self, data, rows, batch_size=batch_size, lr=lr, bar=bar)

    monkeypatch.setattr(slide.Network, "train_rows", poisoned)


def _settings(**kw):
    return runs.RunSettings(epochs=3, batch_size=50, eval_every=300, eval_samples=100, checkpoint_every=0.0,
                            progress=False, **kw)


def test_run_stops_and_keeps_the_last_good_checkpoint_byte_for_byte(tmp_path, monkeypatch):
    net, train, test = _problem(optimizer="adam", lr=1e-2)
    stream = runs.in_memory_source(net, train, seed=0)
    snapshots = []
    original_save = runs.save_checkpoint

    def recording_save(n, run_dir, pos, best=None, average=None):
        original_save(n, run_dir, pos, best, average)
        snapshots.append((run_dir / runs.CHECKPOINT).read_bytes())

    monkeypatch.setattr(runs.checkpoint, "save_checkpoint", recording_save)  # where the run loop looks it up
    _poison_after(monkeypatch, 5, clean_below=0.0)
    with pytest.raises(TrainingDiverged, match="the last good checkpoint .* is kept in"):
        runs.run(net, stream, test, tmp_path, _settings())
    assert (tmp_path / runs.CHECKPOINT).read_bytes() == snapshots[-1]
    good, pos = runs.load_checkpoint(tmp_path)
    assert pos.samples == 5 * 300  # the five healthy pieces of 300 rows; nothing saved after the bad one
    assert not _nonfinite(good)


def test_run_backs_off_from_the_last_good_checkpoint_and_finishes(tmp_path, monkeypatch):
    net, train, test = _problem(optimizer="adam", lr=1e-2)
    stream = runs.in_memory_source(net, train, seed=0)
    _poison_after(monkeypatch, 5, clean_below=1e-2)
    final = runs.run(net, stream, test, tmp_path, _settings(on_divergence="backoff"))
    backoffs = [r for r in runs.read_metrics(tmp_path) if r["kind"] == "backoff"]
    assert len(backoffs) == 1 and backoffs[0]["learning_rate"] == pytest.approx(5e-3)
    model = slide.Network.load(tmp_path / runs.MODEL)
    assert model.learning_rate == pytest.approx(5e-3) and not _nonfinite(model)
    assert final["P@1"] > 0.1  # learning resumed (chance is ~0.003)


def test_run_gives_up_after_max_backoffs(tmp_path, monkeypatch):
    net, train, test = _problem(optimizer="adam", lr=1e-2)
    stream = runs.in_memory_source(net, train, seed=0)
    _poison_after(monkeypatch, 0, clean_below=0.0)  # diverges at every rate, from the first batch
    with pytest.raises(TrainingDiverged, match="after 2 learning-rate back-offs; no checkpoint had been written"):
        runs.run(net, stream, test, tmp_path, _settings(on_divergence="backoff", max_backoffs=2))
    assert not (tmp_path / runs.CHECKPOINT).exists()


def test_cli_exits_3_on_divergence_and_says_why(tmp_path):
    out = subprocess.run([sys.executable, "-m", "slide", "train", "--lr", "1e30", "--epochs", "1", "--quiet",
                          "--train-samples", "2000", "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300, cwd=os.path.expanduser("~"))
    assert out.returncode == 3, out.stderr
    assert "training diverged" in out.stderr and "lower the learning rate" in out.stderr
    assert "Traceback" not in out.stderr
