"""The run loop: an interrupt at any point leaves a checkpoint from which the run resumes exactly."""

import re

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
    runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / "a", settings)
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
        runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / "b", settings)
    monkeypatch.setattr(slide.Network, "evaluate", original)
    resumed, pos = runs.load_checkpoint(tmp_path / "b")
    assert 0 < pos.samples < 4000
    runs.run(resumed, runs.in_memory_source(resumed, train, seed=0), test, tmp_path / "b", settings, pos)
    for name, w in reference.items():
        np.testing.assert_array_equal(resumed.weights()[name], w, err_msg=name)


def test_evaluation_outside_its_budget_waits_and_the_run_says_what_it_spent(tmp_path, capsys):
    net, train, test, settings = _setup()
    settings.eval_budget, settings.epochs = 0.0, 3
    settings.end_checkpoint_after = 0.0  # a checkpoint at the end, for its seconds
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path, settings)
    records = runs.read_metrics(tmp_path)
    kinds = [r["kind"] for r in records]
    # Any evaluation costs something, so a zero budget allows none during training, the first
    # included; the final one always runs.
    assert kinds.count("periodic") == 0 and not any("P@1" in r for r in records if r["kind"] == "epoch")
    assert kinds.count("epoch") == 3 and kinds[-1] == "final" and "P@1" in records[-1]
    assert final["evaluations"] == 0 and final["eval_seconds"] == 0 and final["train_seconds"] > 0
    assert final["checkpoint_seconds"] > 0 and final["model_seconds"] > 0
    # Each epoch without a test score says what evaluation has spent and why the next would not fit.
    said = re.findall(r"evaluation has had ([\d,.]+) (ms|s), and one of 100 points would take it over its budget",
                      capsys.readouterr().out)
    assert len(said) == 3


def test_the_first_evaluation_fits_the_budget_too(tmp_path):
    # 300 test points against 200 training samples an epoch: before any evaluation has run, one is
    # expected to cost what training 300 samples did, 0.75 of the run's 400 samples, far over 5%.
    train, test = make_train_test(200, 300, 600, 1200, seed=9, avg_nnz=20, avg_labels=2)
    net = slide.Network(600, 1200, hidden=(32,), lsh=slide.LSHConfig(k=3, l=8, rehash_every=400), threads=1, seed=0)
    settings = runs.RunSettings(epochs=2, batch_size=64, eval_every=100, eval_samples=300, checkpoint_every=1e9,
                                progress=False, eval_budget=0.05)
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path, settings)
    records = runs.read_metrics(tmp_path)
    assert final["evaluations"] == 0 and [r["kind"] for r in records].count("periodic") == 0
    # A budget that holds them (evaluation may take 100 times the training) runs each one.
    net = slide.Network(600, 1200, hidden=(32,), lsh=slide.LSHConfig(k=3, l=8, rehash_every=400), threads=1, seed=0)
    settings.eval_budget = 100.0
    (tmp_path / "generous").mkdir()
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / "generous", settings)
    records = runs.read_metrics(tmp_path / "generous")
    assert final["evaluations"] == sum(1 for r in records if "P@1" in r and r["kind"] in ("periodic", "epoch"))
    assert all("P@1" in r for r in records if r["kind"] == "epoch") and final["evaluations"] >= 2


def test_checkpoints_follow_the_interval_and_the_end_of_the_run_not_every_epoch(tmp_path):
    net, train, test, settings = _setup()
    settings.epochs = 3  # checkpoint_every=1e9: only the end of the run writes one
    settings.end_checkpoint_after = 0.0
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path, settings)
    assert final["checkpoints"] == 1
    resumed, pos = runs.load_checkpoint(tmp_path)
    assert pos.epoch == 3 and pos.samples == 3 * len(train)

    # By default a run that ends within end_checkpoint_after of its start writes none at its end
    # (nor the best epoch or the mean beside it) ...
    net, train, test, settings = _setup()
    assert settings.end_checkpoint_after == 30.0
    (tmp_path / "short").mkdir()
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / "short", settings,
                     validation=test)
    assert final["checkpoints"] == 0 and final["checkpoint_seconds"] == 0
    assert sorted(p.name for p in (tmp_path / "short").iterdir()) == [runs.METRICS, runs.MODEL]
    # ... nor with end_checkpoint_after above the time since its last, but one at checkpoint_every if less.
    net, train, test, settings = _setup()
    settings.checkpoint_every, settings.end_checkpoint_after = 0.0, 1e9
    (tmp_path / "interval").mkdir()
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / "interval", settings)
    assert runs.load_checkpoint(tmp_path / "interval")[1].epoch == settings.epochs

    net, train, test, settings = _setup()
    settings.checkpoint_every = 0.0  # at every epoch end (and after every piece)
    (tmp_path / "every").mkdir()
    final = runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / "every", settings)
    assert final["checkpoints"] >= settings.epochs


def test_the_final_model_leaves_out_the_optimizer_state_unless_asked(tmp_path):
    from slide.model_file import read_header

    for keep in (False, True):
        net, train, test, settings = _setup()
        settings.final_model_optimizer, settings.end_checkpoint_after = keep, 0.0
        (tmp_path / str(keep)).mkdir()
        runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path / str(keep), settings)
        assert read_header(tmp_path / str(keep) / runs.MODEL)["include_optimizer"] is keep
        assert read_header(tmp_path / str(keep) / runs.CHECKPOINT)["include_optimizer"] is True


def test_epochs_are_judged_on_at_most_eval_samples_held_out_points_the_same_each_time(tmp_path, monkeypatch):
    from slide.datasets.synthetic import Split

    net, train, test, settings = _setup()
    settings.epochs = 3
    held = Split(train.X[:250], train.Y[:250])
    held_rows = {row.tobytes() for row in held.X.toarray()}
    judged = []
    evaluate = slide.Network.evaluate

    def spy(self, X, Y, **kw):
        judged.append(X.toarray())
        return evaluate(self, X, Y, **kw)

    monkeypatch.setattr(slide.Network, "evaluate", spy)
    runs.run(net, runs.in_memory_source(net, Split(train.X[250:], train.Y[250:]), seed=0), test, tmp_path, settings,
             validation=held)
    epochs = [r for r in runs.read_metrics(tmp_path) if r["kind"] == "epoch"]
    assert [r["val_points"] for r in epochs] == [settings.eval_samples] * 3
    on_held = [X for X in judged if all(row.tobytes() in held_rows for row in X)]
    assert len(on_held) == 3 and all(X.shape[0] == settings.eval_samples for X in on_held)
    assert all(np.array_equal(X, on_held[0]) for X in on_held)


def test_a_run_folder_is_read_back_from_a_path_given_as_a_string(tmp_path):
    net, train, test, settings = _setup()
    settings.epochs = 1
    runs.run(net, runs.in_memory_source(net, train, seed=0), test, tmp_path, settings)
    assert runs.read_metrics(str(tmp_path)) == runs.read_metrics(tmp_path) != []
    with pytest.raises(FileNotFoundError, match="is not a run folder"):  # runs.run leaves the settings to its caller
        runs.read_config(str(tmp_path))
