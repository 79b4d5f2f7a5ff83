"""The command line end to end, in subprocesses: exit codes, messages and the run folder."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from slide.datasets import make_train_test
from slide.datasets.xc_files import write_xc

FAST = ["--quiet", "--threads", "2"]


def run(*args, cwd=None, env=None):
    # Never from the source tree: `python -m` puts the working directory first on sys.path.
    return subprocess.run([sys.executable, "-m", "slide", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd or os.path.expanduser("~"), env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "r"
    # a checkpoint at the end, though the run is short (end_checkpoint_after), for the tests that read it
    r = run("train", *FAST, "--epochs", "2", "--out", out, "--set", "end_checkpoint_after=0")
    assert r.returncode == 0, r.stderr
    return out, r


def write_xc_pair(d, n_train, n_test, features, labels, avg_nnz):
    """train.txt and test.txt of a generated problem in folder d."""
    train, test = make_train_test(n_train, n_test, features, labels, seed=3, avg_nnz=avg_nnz, avg_labels=2)
    write_xc(d / "train.txt", train.X, train.Y)
    write_xc(d / "test.txt", test.X, test.Y)
    return d


@pytest.fixture(scope="module")
def xc_files(tmp_path_factory):
    return write_xc_pair(tmp_path_factory.mktemp("xc"), 3000, 400, 800, 1500, avg_nnz=25)


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("slide ")


def test_train_default_fills_the_run_folder(trained_run):
    out, r = trained_run
    assert "test (exact, 2,000 points): P@1" in r.stdout
    assert {"config.json", "metrics.jsonl", "checkpoint.npz", "model.npz"} <= set(os.listdir(out))
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records].count("epoch") == 2 and records[-1]["kind"] == "final"
    assert records[-1]["P@1"] > 0.3 and all(r["wall_seconds"] >= 0 for r in records)
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"] == "default" and config["epochs"] == 2 and config["lsh"]["k"] == 3
    # The time line counts the test evaluations during training, the final one apart.
    during = sum(1 for r in records if r["kind"] in ("periodic", "epoch") and "P@1" in r)
    assert records[-1]["evaluations"] == during
    runs_said = re.search(r"evaluation during training [\d,.]+s \((\d+) runs?,", r.stdout)
    assert runs_said and int(runs_said.group(1)) == during, r.stdout[-400:]


def test_a_short_run_writes_no_checkpoint_at_its_end_and_its_resume_starts_again(tmp_path):
    out = tmp_path / "r"
    r = run("train", *FAST, "--epochs", "1", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "checkpoints 0.0s (0 written" in r.stdout
    assert not {"checkpoint.npz", "best.npz", "average.npz"} & set(os.listdir(out))
    r = run("info", out)
    assert r.returncode == 0, r.stderr
    r = run("train", "--resume", out, "--epochs", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "has no checkpoint (a run writes its first after checkpoint_every, 600 s, or at its end after " \
           "end_checkpoint_after, 30 s); starting its run from the beginning" in r.stdout
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records if r["kind"] == "epoch"] == [1, 2] and records[-1]["kind"] == "final"


def test_a_short_run_draws_its_plot_when_asked(tmp_path):
    """Importing matplotlib and drawing cost more than a small run's training: slide train draws
    progress.png only after PLOT_AFTER_SECONDS of training, slide info --plot whenever asked."""
    out = tmp_path / "r"
    assert run("train", *FAST, "--epochs", "1", "--out", out).returncode == 0
    assert not (out / "progress.png").exists()  # 1 epoch of the small problem: far below the threshold
    r = run("info", out, "--plot")
    assert r.returncode == 0, r.stderr
    assert f"drew {out / 'progress.png'}" in r.stdout and "run " in r.stdout
    assert (out / "progress.png").read_bytes()[:4] == b"\x89PNG"


def test_a_long_enough_run_draws_its_plot_at_epoch_ends_and_at_the_end(tmp_path, monkeypatch):
    from slide import runs
    from slide.cli import main
    from slide.runs import loop

    drawn = []
    monkeypatch.setattr(loop, "PLOT_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(loop, "plot_progress", lambda records, path, title: drawn.append(path) or True)
    # a budget that never binds: how fast this machine evaluates (a sanitized build is 10x slower)
    # must not decide which epoch ends get a test score, and so a redrawn plot
    assert main(["train", *map(str, FAST), "--epochs", "2", "--eval-budget", "1000", "--out", str(tmp_path / "r"),
                 "--quiet"]) == 0
    # both epoch ends and the end of the run
    assert len(drawn) == 3 and set(drawn) == {tmp_path / "r" / runs.PLOT}


def test_info_plot_on_a_run_without_scores_says_why(tmp_path):
    out = tmp_path / "r"
    assert run("train", *FAST, "--epochs", "1", "--out", out).returncode == 0
    (out / "metrics.jsonl").write_text("")
    r = run("info", out, "--plot")
    assert r.returncode != 0 and "no progress.png" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("mode, says", [("sample", "per sample"), ("batch", "per batch"), ("dense", "output dense")])
def test_mode_and_set_choose_how_the_run_trains(tmp_path, mode, says):
    out = tmp_path / "r"
    r = run("train", *FAST, "--epochs", "1", "--mode", mode, "--set", "lsh.k=2", "--set", "network.hidden=[16]",
            "--set", "eval_samples=200", "--out", out)
    assert r.returncode == 0, r.stderr
    assert says in r.stdout and "5000 -> 16 -> 10000" in r.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["network"]["mode"] == mode and config["lsh"]["k"] == 2 and config["eval_samples"] == 200
    if mode != "dense":
        assert "K=2" in r.stdout


def test_info_summarises_a_run_folder(trained_run, tmp_path):
    out, _ = trained_run
    r = run("info", out)
    assert r.returncode == 0, r.stderr
    assert "finished" in r.stdout and "epochs: 2 of 2" in r.stdout and "final: P@1" in r.stdout
    assert "checkpoint.npz" in r.stdout and "with optimizer state" in r.stdout
    summary = json.loads(run("info", out, "--json").stdout)
    final = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][-1]
    assert summary["final"]["P@1"] == final["P@1"] and summary["epochs"] == {"planned": 2, "done": 2}
    assert summary["files"]["model.npz"]["with_optimizer_state"] is False
    assert summary["seconds"]["train_seconds"] == final["train_seconds"]
    r = run("info", tmp_path / "absent")
    assert r.returncode == 2 and "is not a folder" in r.stderr and "Traceback" not in r.stderr


def test_resume_continues_where_the_run_stopped(trained_run, tmp_path):
    out, _ = trained_run
    r = run("train", "--resume", out, "--epochs", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout and "epoch 3:" in r.stdout and "epoch 2:" not in r.stdout
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records if r["kind"] == "epoch"] == [1, 2, 3]


def test_evaluate_and_predict(trained_run, tmp_path):
    out, _ = trained_run
    r = run("evaluate", out, "--test-samples", "300", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["P@1"] > 0.2
    from slide.datasets import small_default

    _, test = small_default()
    points = tmp_path / "points.txt"
    write_xc(points, test.X[:20], test.Y[:20])
    r = run("predict", out / "model.npz", points, "-k", "3")
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "points.txt.top3.txt").read_text().splitlines()
    assert len(lines) == 20 and all(len(line.split()) == 3 for line in lines)
    ids = [int(t.split(":")[0]) for t in lines[0].split()]
    assert all(0 <= i < 10_000 for i in ids)


def test_train_on_user_files_with_a_config_file(xc_files, tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('epochs = 1\nbatch_size = 64\n[network]\nhidden = [32]\n[lsh]\nk = 3\nl = 10\n')
    r = run("train", *FAST, "--train", xc_files / "train.txt", "--test", xc_files / "test.txt", "--config", cfg,
            "--out", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["network"]["hidden"] == [32] and config["lsh"]["l"] == 10 and config["batch_size"] == 64
    r = run("evaluate", tmp_path / "r", "--test", xc_files / "test.txt")
    assert r.returncode == 0 and "P@1" in r.stdout, r.stderr


def test_data_info_and_check(xc_files, tmp_path):
    r = run("data", "info", xc_files / "train.txt")
    assert r.returncode == 0 and "3,000 points, 800 features, 1,500 labels" in r.stdout
    broken = tmp_path / "broken.txt"
    broken.write_text("2 10 5\n0 1:0.5\n1 3:x\n")
    r = run("data", "check", broken)
    assert r.returncode == 2
    assert f"slide: error: {broken}:3: expected a number after '3:', got 'x'" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_dataset_says_where_it_looked_and_what_to_do(tmp_path):
    r = run("train", "--dataset", "amazon670k", "--data-dir", tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for expected in ("dataset 'amazon670k' not found", str(tmp_path / "amazon670k"), "manikvarma.org",
                     "synthetic-amazon670k"):
        assert expected in r.stderr
    r = run("train", "--dataset", "amazon670k", env={"SLIDE_DATA": str(tmp_path / "elsewhere")})
    assert str(tmp_path / "elsewhere" / "amazon670k") in r.stderr


def test_user_errors_are_messages_with_exit_code_2(tmp_path):
    r = run("train", "--threads", "0", "--quiet")
    assert r.returncode == 2 and "slide: error: --threads must be >= 1" in r.stderr and "Traceback" not in r.stderr
    r = run("train", "--dataset", "nope")
    assert r.returncode == 2 and "unknown dataset 'nope'" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("epochs = [\n")
    r = run("train", "--config", bad)
    assert r.returncode == 2 and str(bad) in r.stderr
    r = run("evaluate", tmp_path / "missing")
    assert r.returncode == 2 and "no model file" in r.stderr
    r = run("train", "--bogus-flag")
    assert r.returncode == 2
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    r = run("train", "--quiet", "--out", blocker / "run")
    assert r.returncode == 2 and "slide: error:" in r.stderr and "Traceback" not in r.stderr


def _deliverable_sigint():
    """A test runner started in the background (`cmd &` in a script) passes SIGINT on as ignored,
    and Python then never raises KeyboardInterrupt; give the child the default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig, code, said", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_ctrl_c_and_sigterm_save_a_checkpoint_and_the_run_resumes(tmp_path, sig, code, said):
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "slide", "train", "--epochs", "40", "--threads", "1", "--out", str(out),
                          "--checkpoint-every", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=tmp_path, preexec_fn=_deliverable_sigint)
    deadline = time.time() + 120
    line = ""
    while "run folder" not in line and time.time() < deadline:  # wait until training starts
        line = p.stdout.readline()
    time.sleep(3)
    p.send_signal(sig)  # SIGTERM is what schedulers, `timeout` and container stops send
    _, err = p.communicate(timeout=120)
    assert p.returncode == code, err
    assert f"{said}: checkpoint saved" in err
    assert (out / "checkpoint.npz").exists() and not (out / "model.npz").exists()
    r = run("train", "--resume", out, "--epochs", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    assert (out / "model.npz").exists()
