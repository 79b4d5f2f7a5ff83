"""Training that keeps its best model: a held-out validation split, early stopping on a monitored
metric, the best epoch's parameters restored at the end, and a warm-up for the learning rate."""

import numpy as np
import pytest

import slide
from slide.early_stopping import BestTracker, parameter_names, snapshot
from slide.schedules import lr_multiplier


class Scripted(slide.Network):
    """A network whose validation P@1 follows a script, to pin down when fit stops and restores."""

    script: list = []

    def evaluate(self, X, Y, *, ks=None, mode="dense"):
        return {"P@1": self.script.pop(0), "P@3": 0.0, "nDCG@1": 0.0, "nDCG@3": 0.0}


def _params(net):
    state = net.weights()
    return {name: state[name].copy() for name in parameter_names(net)}


@pytest.fixture(scope="module")
def problem(small_problem):
    train, test = small_problem
    return train.X[:4000], train.Y[:4000], test.X[:500], test.Y[:500]


def test_early_stopping_stops_after_patience_and_restores_the_best_epoch(problem):
    X, Y, Xv, Yv = problem
    net = Scripted(X.shape[1], Y.shape[1], hidden=(16,), lsh=slide.LSHConfig(k=2, l=4), threads=1, seed=0)
    net.script = [0.10, 0.30, 0.20, 0.25, 0.90, 0.95]
    seen, generations = [], []

    def record(n, metrics):
        seen.append(_params(n))
        generations.append(n.table_stats()["layers.0"]["generation"])

    history = net.fit(X, Y, epochs=6, validation_data=(Xv, Yv), early_stopping=2, progress=False, callback=record)
    assert len(history) == 4 and history.stopped_early  # epochs 3 and 4 did not beat epoch 2
    assert history.best_epoch == 2 and history.best_score == pytest.approx(0.30) and history.restored_best
    for name, values in seen[1].items():
        np.testing.assert_array_equal(net.weights()[name], values, err_msg=name)
    # the tables were rebuilt from the restored weights (a new generation), not left as epoch 4 hashed them
    assert net.table_stats()["layers.0"]["generation"] == generations[-1] + 1


def test_restore_best_false_keeps_the_last_epoch(problem):
    X, Y, Xv, Yv = problem
    net = Scripted(X.shape[1], Y.shape[1], hidden=(16,), lsh=None, threads=1, seed=0)
    net.script = [0.3, 0.1, 0.2]
    seen = []
    history = net.fit(X, Y, epochs=3, validation_data=(Xv, Yv), restore_best=False, progress=False,
                      callback=lambda n, m: seen.append(_params(n)))
    assert history.best_epoch == 1 and not history.restored_best and not history.stopped_early
    for name, values in seen[-1].items():
        np.testing.assert_array_equal(net.weights()[name], values)


def test_the_returned_model_is_the_best_validated_one(problem):
    X, Y, Xv, Yv = problem
    # A high rate on 4,000 points over-fits within a few epochs: the last epoch is not the best.
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(64,), lsh=None, threads=1, seed=0, learning_rate=0.02)
    history = net.fit(X, Y, epochs=6, validation_data=(Xv, Yv), progress=False)
    curve = [m["val_P@1"] for m in history.epochs]
    assert history.best_score == max(curve) and history.best_epoch == 1 + int(np.argmax(curve))
    assert net.evaluate(Xv, Yv, use_neighbours=False)["P@1"] == pytest.approx(max(curve), abs=1e-12)
    # The neighbours' weight is picked on the same validation data from a grid that holds 0 (the
    # network alone), so the fused model is never worse there than the best epoch.
    assert net.evaluate(Xv, Yv)["P@1"] >= max(curve)


def test_validation_split_holds_rows_out_of_training(problem):
    X, Y, _, _ = problem
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(16,), lsh=None, threads=1, seed=0)
    history = net.fit(X, Y, epochs=2, validation_split=0.25, early_stopping=5, monitor="loss", progress=False)
    assert net.table_stats()["samples_seen"] == 2 * 3000  # 1,000 of 4,000 points held out
    assert all("val_loss" in m and "val_P@1" in m for m in history.epochs)
    again = slide.Network(X.shape[1], Y.shape[1], hidden=(16,), lsh=None, threads=1, seed=0)
    repeat = again.fit(X, Y, epochs=2, validation_split=0.25, monitor="loss", progress=False)
    assert [m["val_loss"] for m in repeat.epochs] == [m["val_loss"] for m in history.epochs]  # the same rows


@pytest.mark.parametrize("kwargs, match", [
    (dict(validation_split=1.0), "validation_split"),
    (dict(validation_split=-0.1), "validation_split"),
    (dict(validation_split="x"), "validation_split"),
    (dict(validation_split=0.2, validation_data=([], [])), "not both"),
    (dict(early_stopping=3), "need validation"),
    (dict(monitor="loss"), "need validation"),
    (dict(validation_split=0.2, monitor="P@7"), "monitor must be one of"),
    (dict(validation_split=0.2, early_stopping=0), "early_stopping"),
])
def test_bad_early_stopping_arguments(problem, kwargs, match):
    X, Y, _, _ = problem
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(8,), lsh=None, threads=1)
    with pytest.raises(ValueError, match=match):
        net.fit(X[:50], Y[:50], progress=False, **kwargs)


def test_a_snapshot_is_written_over_an_earlier_one_of_the_same_shape_only():
    net = slide.Network(30, 40, hidden=(8,), threads=1, seed=0)
    earlier = snapshot(net)
    arrays = {name: id(a) for name, a in earlier.items()}
    for name in earlier:
        net.weights()[name][...] += 1.0
    again = snapshot(net, into=earlier)
    assert again is earlier and {name: id(a) for name, a in again.items()} == arrays
    for name, values in again.items():
        np.testing.assert_array_equal(values, net.weights()[name])
        assert not np.shares_memory(values, net.weights()[name])  # a copy, not a view
    wider = slide.Network(30, 40, hidden=(16,), threads=1, seed=0)
    other = snapshot(wider, into=earlier)  # another shape: new arrays, the earlier snapshot left as it was
    assert other is not earlier and other["input.weight"].shape == (30, 16)
    np.testing.assert_array_equal(earlier["input.weight"], net.weights()["input.weight"])


def test_warmup_ramps_the_rate_then_follows_the_schedule():
    assert [lr_multiplier("constant", s, 100, 0.1) for s in (0, 4, 9, 10, 99)] == pytest.approx([0.1, 0.5, 1, 1, 1])
    assert lr_multiplier("linear", 50, 100, 0.1) == pytest.approx(lr_multiplier("linear", 50, 100))
    assert lr_multiplier("cosine", 0, 100) == 1.0
    with pytest.raises(ValueError, match="lr_warmup"):
        slide.Network(10, 10, hidden=(4,), lsh=None, threads=1, lr_warmup=1.0)
    net = slide.Network(10, 10, hidden=(4,), lsh=None, threads=1, lr_warmup=0.05)
    assert slide.Network.from_config(net.get_config()).lr_warmup == 0.05


def test_tracker_prefers_lower_loss_and_keeps_the_earlier_of_equal_scores():
    loss = BestTracker("loss", patience=2)
    assert [loss.update({"loss": v}, i) for i, v in enumerate([3.0, 2.0, 2.0, 2.5])] == [True, True, False, False]
    assert loss.best_at == 1 and loss.should_stop
    p1 = BestTracker("P@1")
    assert [p1.update({"P@1": v}, i) for i, v in enumerate([0.2, 0.2, 0.3])] == [True, False, True]
    assert not p1.should_stop  # no patience: never stops


# ---------------------------------------------------------------- the same in `slide train`

def test_cli_validation_split_early_stopping_and_the_best_model(tmp_path):
    import json

    from slide.datasets.xc_files import load_xc
    from slide.early_stopping import held_out_rows

    from .test_cli import run, write_xc_pair

    write_xc_pair(tmp_path, 1500, 300, 400, 600, avg_nnz=20)
    out = tmp_path / "r"
    # A network that over-fits within a few epochs (SLIDE's 128-unit LSH network, no dropout): not
    # what the data's shape would pick, which trains 20 epochs without declining. No re-ranker:
    # the model scored below is the best epoch's network alone.
    config = tmp_path / "run.toml"
    config.write_text('[network]\nhidden = [128]\ndense = false\ninput_norm = "none"\ninput_dropout = 0.0\n'
                      'lr_schedule = "constant"\nrerank = 0\n')
    r = run("train", "--quiet", "--threads", "1", "--train", tmp_path / "train.txt", "--test", tmp_path / "test.txt",
            "--config", config, "--epochs", "30", "--lr", "0.05", "--validation-split", "0.2", "--early-stopping", "2",
            "--out", out, "--set", "end_checkpoint_after=0")  # a checkpoint at the end: the stopped run resumes below
    assert r.returncode == 0, r.stderr
    assert "300 held out for validation" in r.stdout and "the best on validation (P@1)" in r.stdout
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    epochs = [x for x in records if x["kind"] == "epoch"]
    stop = [x for x in records if x["kind"] == "early_stop"]
    assert stop and len(epochs) < 30 and len(epochs) == stop[0]["best_epoch"] + 2  # over-fits, then stops
    best = max(epochs, key=lambda x: (x["val_P@1"], -x["epoch"]))
    assert records[-1]["kind"] == "final" and records[-1]["best_epoch"] == best["epoch"]
    train = load_xc(tmp_path / "train.txt")
    _, held = held_out_rows(len(train), 0.2, 0)
    model = slide.Network.load(out / "model.npz")
    Xv, Yv = train.X[held], train.Y[held]
    assert model.evaluate(Xv, Yv, use_neighbours=False)["P@1"] == pytest.approx(best["val_P@1"], abs=1e-12)
    # The data's shape turns the neighbours' vote on; its weight is picked on the same held-out
    # points from a grid that holds 0, so the fused model is never worse there than the best epoch.
    assert model.memory is not None and model.evaluate(Xv, Yv)["P@1"] >= best["val_P@1"]
    assert (out / "best.npz").exists()
    r = run("train", "--quiet", "--resume", out, "--epochs", str(len(epochs) + 3))  # a stopped run stays stopped
    assert r.returncode == 0 and f"epoch {len(epochs) + 1}:" not in r.stdout, r.stderr


def test_cli_early_stopping_needs_a_validation_split(tmp_path):
    from .test_cli import run

    r = run("train", "--quiet", "--early-stopping", "2")
    assert r.returncode == 2 and "need validation_split" in r.stderr and "Traceback" not in r.stderr
    r = run("train", "--quiet", "--validation-split", "0.95")
    assert r.returncode == 2 and "--validation-split must be <= 0.9" in r.stderr


def test_cli_early_stopping_on_own_files_takes_the_split_their_shape_picks(tmp_path):
    """--early-stopping alone on a user's files is judged after the data's shape has picked its
    settings: 600 labels hold out 5% (the re-ranker's tier), so it runs; 40 labels hold out
    nothing, so it is refused with what to add."""
    import json

    from .test_cli import run, write_xc_pair

    write_xc_pair(tmp_path, 600, 150, 300, 600, avg_nnz=10)
    out = tmp_path / "r"
    r = run("train", "--quiet", "--threads", "1", "--train", tmp_path / "train.txt", "--test", tmp_path / "test.txt",
            "--epochs", "3", "--early-stopping", "1", "--out", out)
    assert r.returncode == 0, r.stderr
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["early_stopping"] == 1 and cfg["validation_split"] == 0.05

    few = tmp_path / "few"
    few.mkdir()
    write_xc_pair(few, 300, 60, 200, 40, avg_nnz=10)
    r = run("train", "--quiet", "--threads", "1", "--train", few / "train.txt", "--test", few / "test.txt",
            "--early-stopping", "1", "--out", tmp_path / "r2")
    assert r.returncode == 2 and "need validation_split" in r.stderr and "Traceback" not in r.stderr
