"""Stochastic weight averaging over epochs (averaging="swa"): validation judges the mean of the
epochs since the run's first quarter beside the network's own parameters, keeps the better, and
the run ends with the best model judged; a run folder's average.npz is resumed and checked."""

import json

import numpy as np
import pytest

import slide
from slide.epoch_average import EpochAverage, first_averaged_epoch

from .test_cli import FAST, run, write_xc_pair
from .test_early_stopping import Scripted, _params  # a network whose validation P@1 follows a script


@pytest.fixture(scope="module")
def problem(small_problem):
    train, test = small_problem
    return train.X[:3000], train.Y[:3000], test.X[:300], test.Y[:300]


def _scripted(problem, script):
    X, Y, _, _ = problem
    net = Scripted(X.shape[1], Y.shape[1], hidden=(16,), lsh=slide.LSHConfig(k=2, l=4), threads=1, seed=0)
    net.script = list(script)
    return net


def test_the_first_averaged_epoch_follows_the_first_quarter():
    assert [first_averaged_epoch(e) for e in (1, 3, 4, 8, 10, 40)] == [1, 1, 2, 3, 3, 11]


@pytest.mark.parametrize("block", [1 << 18, 7, 3])  # one block per array, and many with a short last one
def test_the_mean_folds_in_blocks_to_the_same_bits_as_whole_arrays(monkeypatch, block):
    from slide import epoch_average

    monkeypatch.setattr(epoch_average, "_BLOCK", block)
    rng = np.random.default_rng(0)
    shapes = [(13, 5), (17,), (4, 3, 2), (1, 11)]
    epochs = [{i: rng.normal(size=shape).astype(np.float32) for i, shape in enumerate(shapes)} for _ in range(4)]

    class Holder:  # the network's side of EpochAverage: views of its parameters
        def __init__(self):
            self.now = {}

        def weights(self):
            return self.now

    holder, average = Holder(), EpochAverage(1)
    monkeypatch.setattr(epoch_average, "snapshot", lambda net: {k: v.copy() for k, v in net.weights().items()})
    want = {k: v.copy() for k, v in epochs[0].items()}
    for count, params in enumerate(epochs, start=1):
        holder.now = params
        average.add(holder)
        if count > 1:
            for k, mean in want.items():
                mean += (params[k] - mean) * np.float32(1.0 / count)
    got = average.parameters()
    for k in want:
        assert got[k].tobytes() == want[k].tobytes(), k


def test_a_better_mean_is_kept_and_the_run_ends_with_it(problem):
    X, Y, Xv, Yv = problem
    # epochs 1-3 judge the network alone (the mean starts at epoch 3 and holds one epoch there);
    # from epoch 4 each epoch judges its own parameters, then the mean of epochs 3..now
    net = _scripted(problem, [0.1, 0.2, 0.3, 0.25, 0.35, 0.3, 0.2, 0.2, 0.34])
    seen = []
    history = net.fit(X, Y, epochs=8, validation_data=(Xv, Yv), early_stopping=2, averaging="swa", progress=False,
                      callback=lambda n, m: seen.append(_params(n)))
    assert len(history) == 6 and history.stopped_early and not net.script
    assert history.best_epoch == 4 and history.averaged_from == 3 and history.restored_best
    assert [e.get("val_averaged_from") for e in history.epochs] == [None, None, None, 3, None, 3]
    for name in seen[0]:
        np.testing.assert_allclose(net.weights()[name], (seen[2][name] + seen[3][name]) / 2, rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    # training went on from its own parameters: epoch 5 started from epoch 4's, not from the mean
    assert any(not np.array_equal(seen[3][n], (seen[2][n] + seen[3][n]) / 2) for n in seen[0])


def test_the_networks_own_parameters_win_when_the_mean_is_worse(problem):
    X, Y, Xv, Yv = problem
    net = _scripted(problem, [0.1, 0.2, 0.3, 0.25, 0.4, 0.35, 0.5, 0.45])  # epochs 3-5 judge two
    seen = []
    history = net.fit(X, Y, epochs=5, validation_data=(Xv, Yv), averaging="swa", progress=False,
                      callback=lambda n, m: seen.append(_params(n)))
    assert history.best_epoch == 5 and history.averaged_from is None and not history.restored_best
    for name, values in seen[-1].items():
        np.testing.assert_array_equal(net.weights()[name], values, err_msg=name)


def test_judging_the_mean_gives_the_network_its_parameters_back_bit_for_bit(problem):
    X, Y, Xv, Yv = problem
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(16,), lsh=slide.LSHConfig(k=2, l=4), threads=1, seed=0)
    net.fit(X, Y, epochs=1, progress=False)
    average = EpochAverage(first=1)
    average.add(net)
    net.fit(X, Y, epochs=1, progress=False)
    own = _params(net)
    average.add(net)
    with average.in_place_of_training(net, tables=True):
        for name in own:
            assert not np.array_equal(net.weights()[name], own[name]), name
    for name, values in own.items():
        np.testing.assert_array_equal(net.weights()[name], values, err_msg=name)


@pytest.mark.parametrize("kwargs, message", [
    (dict(averaging="swa"), "need validation_data or validation_split"),
    (dict(averaging="mean", validation_split=0.1), "averaging must be one of"),
    (dict(averaging="swa", validation_split=0.1, restore_best=False), "needs restore_best=True"),
])
def test_bad_averaging_arguments_are_refused(problem, kwargs, message):
    X, Y, _, _ = problem
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(16,), threads=1)
    with pytest.raises(ValueError, match=message):
        net.fit(X, Y, epochs=2, progress=False, **kwargs)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_xc_pair(tmp_path_factory.mktemp("xc"), 1500, 300, 400, 600, avg_nnz=20)


def _train(files, out, *flags):
    return run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--out", out,
               "--validation-split", "0.2", "--averaging", "swa", "--set", "end_checkpoint_after=0", *flags)


def test_a_run_averages_says_so_and_resumes_with_its_mean(tmp_path, files):
    out = tmp_path / "r"
    r = _train(files, out, "--epochs", "4", "--lr", "0.01")
    assert r.returncode == 0, r.stderr
    assert (out / "average.npz").exists()
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    averaged = [rec for rec in records if rec.get("val_averaged_from") is not None]
    assert all(rec["val_averaged_from"] == 2 and rec["epoch"] >= 3 for rec in averaged)
    assert ("by the mean of epochs 2 to" in r.stdout) == bool(averaged)
    # 9 epochs would average from epoch 3; the resumed mean keeps its own first epoch, 2
    resumed = run("train", "--resume", out, "--epochs", "9", *FAST)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr and "averaging starts again" not in resumed.stderr
    later = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(rec["val_averaged_from"] == 2 for rec in later if rec.get("val_averaged_from") is not None)


def test_a_mean_that_is_not_the_checkpoints_is_dropped_with_a_warning(tmp_path, files):
    first, second = tmp_path / "a", tmp_path / "b"
    assert _train(files, first, "--epochs", "3").returncode == 0  # the mean of epochs 1-3
    assert _train(files, second, "--epochs", "4").returncode == 0  # the mean of epochs 2-4
    (second / "average.npz").write_bytes((first / "average.npz").read_bytes())
    r = run("train", "--resume", second, "--epochs", "5", *FAST)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "average.npz is not the mean the checkpoint names" in r.stderr and "averaging starts again" in r.stderr


def test_without_a_validation_split_averaging_is_refused(tmp_path, files):
    r = run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--out", tmp_path / "r",
            "--averaging", "swa", "--validation-split", "0")
    assert r.returncode == 2 and "need validation_split" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("damage, message", [
    ("truncate", "average.npz"),
    ("remove", "average.npz is missing"),
])
def test_a_damaged_or_missing_average_is_refused_on_resume(tmp_path, files, damage, message):
    out = tmp_path / "r"
    assert _train(files, out, "--epochs", "3").returncode == 0
    path = out / "average.npz"
    if damage == "remove":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:300])
    r = run("train", "--resume", out, "--epochs", "5", *FAST)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_mean_of_another_network_is_refused(tmp_path, problem):
    from slide.model_file import ModelFileError
    from slide.runs.average_file import read_average, write_average

    X, Y, _, _ = problem
    other = slide.Network(X.shape[1], Y.shape[1], hidden=(8,), threads=1)
    average = EpochAverage(first=1)
    average.add(other)
    write_average(other, tmp_path, average)
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(16,), threads=1)
    with pytest.raises(ModelFileError, match="average.npz: the mean of another network"):
        read_average(net, tmp_path, average.state(), first=1)
    resumed = read_average(other, tmp_path, average.state(), first=1)  # its own network reads it back
    for name, values in average.parameters().items():
        np.testing.assert_array_equal(resumed.parameters()[name], values, err_msg=name)


def test_an_unchanged_mean_is_not_written_again(tmp_path, problem):
    from slide.runs.average_file import read_average, write_average

    X, Y, _, _ = problem
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(8,), threads=1)
    average = EpochAverage(first=1)
    write_average(net, tmp_path, average)  # no epoch in the mean yet: nothing to write
    assert not (tmp_path / "average.npz").exists()
    average.add(net)
    write_average(net, tmp_path, average)
    path = tmp_path / "average.npz"

    def identity():
        stat = path.stat()
        return stat.st_ino, stat.st_mtime_ns

    written = identity()
    write_average(net, tmp_path, average)  # a second checkpoint within the epoch
    assert identity() == written
    resumed = read_average(net, tmp_path, average.state(), first=1)
    write_average(net, tmp_path, resumed)  # the mean the run resumed with is already there
    assert identity() == written
    resumed.add(net)
    write_average(net, tmp_path, resumed)
    assert identity() != written
    assert read_average(net, tmp_path, resumed.state(), first=1).count == 2


def _checkpointed(tmp_path, net, average, best):
    from slide.runs.checkpoint import save_checkpoint
    from slide.training.position import Position

    save_checkpoint(net, tmp_path, Position(), best, average)
    return tmp_path / "best.npz", tmp_path / "average.npz"


def _averaged(problem, epochs):
    """A small network, the mean of its parameters over `epochs` epoch ends, and no best kept yet."""
    from slide.best_epoch import BestEpoch

    X, Y, _, _ = problem
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(8,), threads=1, seed=0)
    average = EpochAverage(first=1)
    for epoch in range(epochs):
        if epoch:
            net.fit(X[:200], Y[:200], epochs=1)
        average.add(net)
    return net, average, BestEpoch()


def _keep_the_mean(net, average, best):
    with average.in_place_of_training(net, tables=False):
        best.keep(net)


def _assert_best_file_holds(net, run_dir, parameters):
    """best.npz, read back as a resumed run reads it, holds `parameters` bit for bit."""
    from slide.best_epoch import BestEpoch

    restored = slide.Network.from_config(net.get_config())
    BestEpoch().restore_into(restored, run_dir)
    for name, values in parameters.items():
        np.testing.assert_array_equal(restored.weights()[name], values, err_msg=name)


def test_a_best_epoch_that_is_the_mean_is_a_link_to_its_file_and_reads_back_as_it(tmp_path, problem):
    net, average, best = _averaged(problem, epochs=2)
    _keep_the_mean(net, average, best)
    best_file, average_file = _checkpointed(tmp_path, net, average, best)
    assert best_file.samefile(average_file)
    kept = {k: v.copy() for k, v in average.parameters().items()}
    _assert_best_file_holds(net, tmp_path, kept)
    # the next epoch's mean replaces average.npz; best.npz keeps the mean it linked
    X, Y, _, _ = problem
    net.fit(X[:200], Y[:200], epochs=1)
    average.add(net)
    _checkpointed(tmp_path, net, average, best)
    assert not best_file.samefile(average_file)
    _assert_best_file_holds(net, tmp_path, kept)


def test_a_best_epoch_that_is_neither_the_mean_nor_the_network_now_is_a_file_of_its_own(tmp_path, problem):
    net, average, best = _averaged(problem, epochs=2)
    best.keep(net)  # this epoch's own parameters; training goes on past them
    kept = {name: net.weights()[name].copy() for name in average.parameters()}
    X, Y, _, _ = problem
    net.fit(X[:200], Y[:200], epochs=1)
    average.add(net)
    best_file, average_file = _checkpointed(tmp_path, net, average, best)
    assert best_file.stat().st_nlink == 1
    _assert_best_file_holds(net, tmp_path, kept)


def test_without_hard_links_the_best_mean_is_written_as_a_copy(tmp_path, problem, monkeypatch):
    import os

    def no_links(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    net, average, best = _averaged(problem, epochs=2)
    _keep_the_mean(net, average, best)
    monkeypatch.setattr(os, "link", no_links)
    best_file, average_file = _checkpointed(tmp_path, net, average, best)
    assert not best_file.samefile(average_file)
    assert not list(tmp_path.glob(".*.tmp"))
    _assert_best_file_holds(net, tmp_path, average.parameters())


def test_a_mean_file_that_is_a_symbolic_link_is_never_linked_to(tmp_path, problem):
    from slide.runs.average_file import write_average

    net, average, best = _averaged(problem, epochs=2)  # a mean that is not the network itself
    run_dir = tmp_path / "run"
    write_average(net, run_dir, average)
    elsewhere = tmp_path / "elsewhere.npz"  # as a folder copied from elsewhere may hold average.npz -> a file
    (run_dir / "average.npz").rename(elsewhere)
    (run_dir / "average.npz").symlink_to(elsewhere)
    _keep_the_mean(net, average, best)
    best_file, _ = _checkpointed(run_dir, net, average, best)
    assert not best_file.is_symlink() and best_file.stat().st_nlink == 1 and not best_file.samefile(elsewhere)
    assert elsewhere.stat().st_nlink == 1


def test_a_best_epoch_that_is_the_network_now_is_a_second_name_for_its_checkpoint(tmp_path, problem):
    from slide.atomic_files import remove_stale_temporaries
    from slide.runs.checkpoint import checkpoint_position

    net, average, best = _averaged(problem, epochs=2)
    best.keep(net)  # a run still improving: its last epoch's own parameters are the best
    best_file, _ = _checkpointed(tmp_path, net, average, best)
    assert best_file.samefile(tmp_path / "checkpoint.npz")
    assert checkpoint_position(tmp_path).checkpoints == 1
    assert not list(tmp_path.glob(".*.tmp"))
    own = net.weights()
    _assert_best_file_holds(net, tmp_path, {name: own[name].copy() for name in average.parameters()})
    (tmp_path / ".checkpoint.npz.123.staged.tmp").write_bytes(b"left by a kill")
    assert [p.name for p in remove_stale_temporaries(tmp_path)] == [".checkpoint.npz.123.staged.tmp"]


def test_a_checkpoint_that_fails_beside_its_best_leaves_the_last_one_whole(tmp_path, problem, monkeypatch):
    import os

    net, average, best = _averaged(problem, epochs=2)
    _checkpointed(tmp_path, net, average, best)  # nothing kept yet: a checkpoint of its own
    before = (tmp_path / "checkpoint.npz").read_bytes()
    best.keep(net)
    real_replace = os.replace

    def full_disk(source, target):
        if str(source).endswith(".staged.tmp"):
            raise OSError(28, "No space left on device")
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        _checkpointed(tmp_path, net, average, best)
    assert (tmp_path / "checkpoint.npz").read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))
