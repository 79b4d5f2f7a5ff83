"""A run folder, shard folder or data cache from anywhere (issue 28): nothing slide writes follows a
symbolic link out of its folder (class 3), a conversion never loses the previous one (class 7), a
run folder has one writer at a time, and a checkpoint copied from another run is refused (class 8)."""

import errno
import fcntl
import json
import os
import shutil

import pytest

from slide import runs
from slide.datasets import make_train_test
from slide.datasets import shards as shards_module
from slide.datasets.convert import convert_xc
from slide.datasets.shards import ShardFolder, write_split
from slide.datasets.xc_files import load_xc, stream_shards, write_xc

from .test_cli import FAST, run, write_xc_pair
from .test_cli_reliability import refused

LOCK_NAME = ".lock"  # slide.run_lock.LOCK: spelled out so that today's code fails the tests, not their import


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_xc_pair(tmp_path_factory.mktemp("xc"), 1200, 200, 300, 400, avg_nnz=15)


@pytest.fixture(scope="module")
def template_run(tmp_path_factory, files):
    """A finished one-epoch run, copied by the tests that change it."""
    out = tmp_path_factory.mktemp("runs") / "r"
    r = run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1",
            "--set", "network.hidden=[16]", "--out", out, "--set", "end_checkpoint_after=0")
    assert r.returncode == 0, r.stderr
    return out


def copy_run(template, tmp_path, name="r"):
    out = tmp_path / name
    shutil.copytree(template, out, symlinks=True)
    return out


def outside_file(tmp_path, text="precious\n"):
    victim = tmp_path / "elsewhere" / "victim.txt"
    victim.parent.mkdir(exist_ok=True)
    victim.write_text(text)
    return victim


# ---- class 3: no write follows a symlink out of its folder ----

def test_appending_metrics_never_writes_through_a_link(tmp_path):
    victim = outside_file(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / runs.METRICS).symlink_to(victim)
    with pytest.raises(ValueError, match="metrics.jsonl is a symbolic link"):
        runs.append_metrics(run_dir, {"kind": "epoch"})
    assert victim.read_text() == "precious\n"


def test_rewinding_metrics_never_truncates_through_a_link(tmp_path):
    victim = outside_file(tmp_path, "x" * 1000)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / runs.METRICS).symlink_to(victim)
    with pytest.raises(ValueError, match="metrics.jsonl is a symbolic link"):
        runs.rewind_metrics(run_dir, runs.Position(metrics_bytes=10))
    assert victim.read_text() == "x" * 1000


@pytest.mark.parametrize("name", [runs.METRICS, runs.PLOT, runs.MODEL, runs.CONFIG, "best.npz", LOCK_NAME])
def test_resume_never_writes_through_a_linked_run_file(tmp_path, template_run, name):
    out = copy_run(template_run, tmp_path)
    victim = outside_file(tmp_path, (out / name).read_text() if name in (runs.METRICS, runs.CONFIG) else "precious")
    before = victim.read_bytes()
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(victim)
    r = run("train", "--resume", out, "--epochs", "2", "--quiet")
    assert victim.read_bytes() == before
    refused(r, str(out / name), "symbolic link")


def test_predict_output_that_is_a_link_leaves_the_linked_file_alone(tmp_path, template_run, files):
    victim = outside_file(tmp_path)
    out = tmp_path / "points.top5.txt"
    out.symlink_to(victim)
    r = run("predict", template_run, files / "test.txt", "--out", out)
    assert victim.read_text() == "precious\n"
    assert r.returncode in (0, 2) and "Traceback" not in r.stderr, r.stderr
    if r.returncode == 0:
        assert not out.is_symlink() and out.read_text().count("\n") == 200


def small_split(seed=1, n=300):
    train, _ = make_train_test(n, 10, 50, 40, seed=seed, avg_nnz=5, avg_labels=2)
    return train


def test_a_data_cache_that_links_outside_is_never_written_through(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    split = small_split()
    write_xc(data / "train.txt", split.X, split.Y)
    elsewhere = tmp_path / "elsewhere"
    write_split(elsewhere, small_split(seed=2))  # someone's conversion, stale for train.txt
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    (data / "train.txt.shards").symlink_to(elsewhere, target_is_directory=True)
    for load in (lambda: load_xc(data / "train.txt"), lambda: stream_shards(data / "train.txt").load()):
        got = load()
        assert (got.X != split.X).nnz == 0 and (got.Y != split.Y).nnz == 0
        assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


def test_converting_into_a_folder_of_linked_shards_leaves_their_targets_alone(tmp_path):
    split = small_split()
    write_xc(tmp_path / "train.txt", split.X, split.Y)
    out = tmp_path / "shards"
    convert_xc(tmp_path / "train.txt", out, shard_rows=100)
    victim = outside_file(tmp_path)
    (out / "part-00001.shard").unlink()
    (out / "part-00001.shard").symlink_to(victim)
    convert_xc(tmp_path / "train.txt", out, shard_rows=100)
    assert victim.read_text() == "precious\n"
    assert not any(p.is_symlink() for p in out.iterdir())


def test_a_sharded_checkpoint_folder_that_links_outside_is_refused(tmp_path):
    from slide.distributed.checkpoint import save_shards

    class OneRank:
        rank, size = 0, 1

        def broadcast(self, value):
            return value

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "save-000001").mkdir(parents=True)
    (elsewhere / "save-000001" / "keep.txt").write_text("precious")
    (tmp_path / "checkpoint").symlink_to(elsewhere, target_is_directory=True)
    net = type("Net", (), {"comm": OneRank()})()
    with pytest.raises(ValueError, match="symbolic link"):
        save_shards(net, tmp_path / "checkpoint")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["save-000001"]


# ---- class 7: a conversion is built beside the old one and swapped in at the end ----

def _xc_file(tmp_path, seed, n=500, name="train.txt"):
    split = small_split(seed, n)
    write_xc(tmp_path / name, split.X, split.Y)
    return tmp_path / name, split


def _leftovers(parent, keep):
    return sorted(p.name for p in parent.iterdir() if p.name not in keep)


def _malformed(source, bad):
    """`source` with its 400th point replaced by a line that does not parse (after some shards are written)."""
    lines = source.read_text().splitlines()
    bad.write_text("\n".join(lines[:400] + ["0,1 this-is-not-a-feature"] + lines[401:]) + "\n")
    return bad


def _fail_after(monkeypatch, n, error):
    real = shards_module.write_shard
    calls = {"n": 0}

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > n:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(shards_module, "write_shard", failing)


@pytest.mark.parametrize("after", [0, 2])
def test_a_full_disk_midway_leaves_the_previous_conversion_whole(tmp_path, monkeypatch, after):
    old_source, old = _xc_file(tmp_path, seed=1, name="old.txt")
    out = tmp_path / "shards"
    convert_xc(old_source, out, shard_rows=100)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    new_source, _ = _xc_file(tmp_path, seed=2, name="new.txt")
    _fail_after(monkeypatch, after, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError, match="No space left"):
        convert_xc(new_source, out, shard_rows=100)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    got = ShardFolder.open(out).load()
    assert (got.X != old.X).nnz == 0
    assert _leftovers(tmp_path, {"old.txt", "new.txt", "shards"}) == []


def test_a_malformed_file_leaves_the_previous_conversion_whole(tmp_path):
    old_source, old = _xc_file(tmp_path, seed=1, name="old.txt")
    out = tmp_path / "shards"
    convert_xc(old_source, out, shard_rows=100)
    bad = _malformed(old_source, tmp_path / "bad.txt")
    with pytest.raises(ValueError, match="bad.txt"):
        convert_xc(bad, out, shard_rows=100, block_bytes=2000)  # the bad line comes after shards are written
    assert (ShardFolder.open(out).load().X != old.X).nnz == 0
    assert _leftovers(tmp_path, {"old.txt", "bad.txt", "shards"}) == []


def test_the_old_conversion_stays_until_the_new_one_is_complete(tmp_path, monkeypatch):
    old_source, _ = _xc_file(tmp_path, seed=1, name="old.txt")
    out = tmp_path / "shards"
    convert_xc(old_source, out, shard_rows=100)
    new_source, new = _xc_file(tmp_path, seed=2, n=700, name="new.txt")
    real = shards_module.write_shard
    seen = []

    def watching(*args, **kwargs):
        seen.append(len(ShardFolder.open(out)))  # the old one, whole, while the new one is written
        return real(*args, **kwargs)

    monkeypatch.setattr(shards_module, "write_shard", watching)
    folder = convert_xc(new_source, out, shard_rows=100)
    assert seen == [5] * 7
    assert folder.path == out and (ShardFolder.open(out).load().X != new.X).nnz == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"] + [f"part-{i:05d}.shard" for i in range(7)]
    assert _leftovers(tmp_path, {"old.txt", "new.txt", "shards"}) == []


def test_the_cli_convert_keeps_the_old_conversion_when_the_new_one_fails(tmp_path):
    old_source, old = _xc_file(tmp_path, seed=1, name="old.txt")
    out = tmp_path / "shards"
    assert run("data", "convert", old_source, out).returncode == 0
    bad = tmp_path / "bad.txt"  # beyond the first block the CLI reads, so shards are written before it fails
    line = "0,1 " + " ".join(f"{i}:1" for i in range(40)) + "\n"
    bad.write_text(f"80001 50 40\n{line * 80000}0,1 this-is-not-a-feature\n")  # 15 MB: two blocks
    refused(run("data", "convert", bad, out, "--shard-rows", "1000"), "bad.txt")
    assert (ShardFolder.open(out).load().X != old.X).nnz == 0
    assert _leftovers(tmp_path, {"old.txt", "bad.txt", "shards"}) == []


def test_a_cache_that_cannot_be_finished_keeps_the_previous_one(tmp_path, monkeypatch):
    out = tmp_path / "cache.shards"
    old = small_split(seed=1)
    write_split(out, old, shard_rows=50)
    _fail_after(monkeypatch, 1, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError):
        write_split(out, small_split(seed=2), shard_rows=50)
    assert (ShardFolder.open(out).load().X != old.X).nnz == 0
    assert _leftovers(tmp_path, {"cache.shards"}) == []


# ---- class 8: one writer per run folder ----

def _hold_lock(run_dir):
    fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_a_second_resume_of_a_run_in_use_is_refused(tmp_path, template_run):
    out = copy_run(template_run, tmp_path)
    metrics = (out / runs.METRICS).read_text()
    fd = _hold_lock(out)
    try:
        refused(run("train", "--resume", out, "--epochs", "2", "--quiet"), str(out), "in use")
    finally:
        os.close(fd)
    assert (out / runs.METRICS).read_text() == metrics
    r = run("train", "--resume", out, "--epochs", "2", "--quiet")  # released: it goes on
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["kind"] for x in (out / runs.METRICS).read_text().splitlines()].count("final") == 1


def test_overwriting_a_run_in_use_is_refused_and_deletes_nothing(tmp_path, template_run, files):
    out = copy_run(template_run, tmp_path)
    names = sorted(p.name for p in out.iterdir())
    fd = _hold_lock(out)
    try:
        refused(run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1",
                    "--out", out, "--overwrite"), str(out), "in use")
    finally:
        os.close(fd)
    assert sorted(p.name for p in out.iterdir()) == names


def test_the_lock_names_the_process_holding_it(tmp_path, template_run):
    from slide.run_lock import lock_run

    out = copy_run(template_run, tmp_path)
    with lock_run(out):
        r = run("train", "--resume", out, "--epochs", "2", "--quiet")
    refused(r, str(out), "in use", f"process {os.getpid()}")


def test_a_lock_left_by_a_killed_run_never_blocks(tmp_path, template_run):
    out = copy_run(template_run, tmp_path)
    (out / LOCK_NAME).write_text("999999999\n")  # its process is gone, so nobody holds the lock
    r = run("train", "--resume", out, "--epochs", "2", "--quiet")
    assert r.returncode == 0, r.stderr


def test_a_folder_holding_only_a_lock_is_a_new_run_folder(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / LOCK_NAME).write_text("")
    with runs.create_run_dir(out):
        pass
    (out / runs.CONFIG).write_text("{}")
    with pytest.raises(ValueError, match="already holds a run"):
        runs.create_run_dir(out)


# ---- class 8: a checkpoint from another run is refused ----

def test_a_checkpoint_copied_from_another_run_is_refused(tmp_path, template_run, files):
    other = tmp_path / "other"
    r = run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1",
            "--set", "network.hidden=[24]", "--out", other, "--set", "end_checkpoint_after=0")
    assert r.returncode == 0, r.stderr
    out = copy_run(template_run, tmp_path)
    shutil.copy(other / runs.CHECKPOINT, out / runs.CHECKPOINT)
    refused(run("train", "--resume", out, "--epochs", "2", "--quiet"), str(out / runs.CHECKPOINT),
            str(out / runs.CONFIG), "hidden")


@pytest.mark.parametrize("change, setting", [
    (lambda c: c.update(seed=7), "seed"),
    (lambda c: c["network"].update(dense=False), "lsh"),  # the template run's output layer is dense
    (lambda c: c["network"].update(optimizer="sgd"), "optimizer"),
    (lambda c: c["network"].update(learning_rate=0.5), "learning_rate"),
    (lambda c: c["network"].update(precision="bf16"), "precision"),
])
def test_a_checkpoint_that_disagrees_with_config_json_is_refused(tmp_path, template_run, change, setting):
    out = copy_run(template_run, tmp_path)
    config = json.loads((out / runs.CONFIG).read_text())
    change(config)
    (out / runs.CONFIG).write_text(json.dumps(config))
    refused(run("train", "--resume", out, "--epochs", "2", "--quiet"), str(out / runs.CHECKPOINT), setting)


def test_a_learning_rate_lowered_by_back_offs_still_matches():
    from slide.run_identity import first_difference

    config = {"seed": 0, "network": {"hidden": [16], "learning_rate": 0.01, "dense": True}, "lsh": {}}
    saved = {"input_dim": 3, "output_dim": 4, "hidden": [16], "lsh": None, "learning_rate": 0.01 * 0.5 ** 2,
             "seed": 0}
    assert first_difference(saved, config, input_dim=3, output_dim=4) is None
    assert first_difference({**saved, "learning_rate": 0.3}, config, input_dim=3, output_dim=4)[0] == \
        "learning_rate"
    assert first_difference(saved, config, input_dim=3, output_dim=5)[0] == "output_dim"


def test_the_first_differing_lsh_setting_is_named():
    from slide.config import LSHConfig
    from slide.run_identity import first_difference

    lsh = LSHConfig.from_dict({"k": 4, "l": 10})
    config = {"seed": 0, "network": {"hidden": [8], "dense": False}, "lsh": {"k": 4, "l": 10}}
    saved = {"input_dim": 3, "output_dim": 4, "hidden": [8], "lsh": lsh.to_dict(), "seed": 0}
    assert first_difference(saved, config, input_dim=3, output_dim=4) is None
    config["lsh"]["l"] = 12
    assert first_difference(saved, config, input_dim=3, output_dim=4) == ("lsh.l", 10, 12)
