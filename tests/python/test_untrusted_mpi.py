"""Issue 28, class 9 (and the MPI items of classes 6 and 11): an MPI run is held to what a single
process is held to. Data that lies (header counts, gzip under another name, other content on
another rank, a file changed before --resume), settings an MPI job cannot honour, a run folder
resumed by the other launcher, and shares too small to hold out validation rows each end with one
clear error (or train correctly), never a hang, a traceback or a run that silently differs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from slide.cli.train_mpi import environment_outside_mpi_job
from slide.datasets.xc_files import write_xc

MPIRUN = shutil.which("mpirun")
HAVE_MPI4PY = subprocess.run([sys.executable, "-c", "from mpi4py import MPI"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(MPIRUN is None or not HAVE_MPI4PY, reason="needs mpirun and mpi4py")
TIMEOUT = 90  # a deadlocked job fails the test instead of hanging it


def launcher(n: int) -> list[str]:
    return [MPIRUN, "--oversubscribe", "-n", str(n)] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def slide_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "slide", *args]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # cwd away from the source tree, whose slide/ would shadow the installed extension
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                          env=environment_outside_mpi_job(), cwd=cwd)


def mpi_train(tmp: Path, n: int, *args: str) -> subprocess.CompletedProcess:
    return run(launcher(n) + slide_cmd("train", "--threads", "1", "--quiet", *args), tmp)


def refused(got: subprocess.CompletedProcess, *needles: str) -> None:
    """The job failed with one clear error holding every needle, said once, without a traceback."""
    text = got.stdout + got.stderr
    assert got.returncode != 0, text[-2000:]
    assert "Traceback" not in text, text[-3000:]
    errors = [line for line in got.stderr.splitlines() if line.startswith("slide: error")]
    assert len(errors) == 1, got.stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], errors[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """train.txt (300 points) and test.txt (100): 50 features, 40 labels."""
    tmp = tmp_path_factory.mktemp("data")
    n, d, labels = 400, 50, 40
    X = sp.random(n, d, density=0.1, format="csr", random_state=3, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(n, np.float32), np.arange(n) % labels, np.arange(n + 1)), shape=(n, labels))
    write_xc(tmp / "train.txt", X[:300], Y[:300])
    write_xc(tmp / "test.txt", X[300:], Y[300:])
    return tmp


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


# ---------------------------------------------------------------------------- files that lie

@pytest.mark.parametrize("name,make,needles", [
    ("more.txt", lambda h, body: ["5000 50 40\n"] + body, ("more.txt:302:", "promises 5000 points", "ends after 300")),
    ("fewer.txt", lambda h, body: ["100 50 40\n"] + body, ("fewer.txt:102:", "more points than the header's 100")),
    ("blank.txt", lambda h, body: [h] + body[:150] + ["\n"] * 40 + body[150:], ("blank.txt:152:", "blank line")),
    ("empty_tail.txt", lambda h, body: ["301 50 40\n"] + body + ["\n"] * 30, ("promises 301 points",)),
])
def test_the_byte_range_reader_checks_the_file_as_one_parser_does(data, name, make, needles):
    text = lines_of(data / "train.txt")
    (data / name).write_text("".join(make(text[0], text[1:])))
    got = mpi_train(data, 3, "--train", str(data / name), "--test", str(data / "test.txt"), "--out",
                    str(data / f"run-{name}"), "--epochs", "1")
    refused(got, *needles)


@pytest.mark.parametrize("name", ["gz.txt", pytest.param("plain.dat", marks=pytest.mark.slow)])
def test_a_gzip_file_is_named_for_what_it_is_under_any_name(data, name):
    import gzip

    (data / name).write_bytes(gzip.compress((data / "train.txt").read_bytes()))
    got = mpi_train(data, 2, "--train", str(data / name), "--test", str(data / "test.txt"), "--out",
                    str(data / f"run-{name}"), "--epochs", "1")
    refused(got, name, "gzip", "gunzip")


def test_a_test_file_of_another_shape_is_refused(data):
    other = data / "other_test.txt"
    write_xc(other, sp.random(20, 60, density=0.1, format="csr", random_state=1, dtype=np.float32),
             sp.csr_matrix((np.ones(20, np.float32), np.arange(20) % 40, np.arange(21)), shape=(20, 40)))
    got = mpi_train(data, 2, "--train", str(data / "train.txt"), "--test", str(other), "--out", str(data / "run-o"),
                    "--epochs", "1")
    refused(got, "other_test.txt", "disagree on the number of features")


def _can_unshare() -> bool:
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True) if shutil.which("unshare") else None
    return probe is not None and probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs unshare -m (root) to show one rank another file")
@pytest.mark.parametrize("which", ["train", pytest.param("test", marks=pytest.mark.slow)])
def test_ranks_reading_different_files_at_one_path_are_refused(data, tmp_path, which):
    """Rank 1 runs in a mount namespace of its own, where the path names another file of the same
    size (two points swapped): what two machines with different copies look like."""
    original = data / f"{which}.txt"
    text = lines_of(original)
    text[2], text[3] = text[3], text[2]
    (tmp_path / "swapped.txt").write_text("".join(text))
    cmd = slide_cmd("train", "--train", str(data / "train.txt"), "--test", str(data / "test.txt"), "--out",
                    str(tmp_path / "run"), "--epochs", "1", "--threads", "1", "--quiet")
    masked = ["unshare", "-m", "sh", "-c", f'mount --bind "{tmp_path / "swapped.txt"}" "{original}" && exec "$@"',
              "sh", *cmd]
    got = run(launcher(1) + cmd + [":", "-n", "1"] + masked, tmp_path)
    refused(got, f"{original} differs between ranks", "rank 1")


# ---------------------------------------------------------------------------- settings

@pytest.mark.parametrize("how", [["--stream"], pytest.param(["--set", "stream=true"], marks=pytest.mark.slow),
                                 ["--config", "stream.toml"]])
def test_stream_is_refused_under_mpi_not_recorded_and_ignored(data, how):
    (data / "stream.toml").write_text("stream = true\n")
    how = [str(data / h) if h.endswith(".toml") else h for h in how]
    out = data / f"run-stream-{len(how)}-{how[-1][-4:]}"
    got = mpi_train(data, 2, "--train", str(data / "train.txt"), "--test", str(data / "test.txt"), "--out", str(out),
                    "--epochs", "1", *how)
    refused(got, "--stream", "mpirun")
    assert not out.exists()


@pytest.mark.parametrize("how,name", [(["--eval-every", "100"], "eval_every"),
                                      pytest.param(["--set", "checkpoint_every=5"], "checkpoint_every",
                                                   marks=pytest.mark.slow),
                                      (["--set", "on_divergence=backoff"], "on_divergence"),
                                      (["--config", "evals.toml"], "eval_samples")])
def test_settings_of_the_single_process_loop_are_refused_under_mpi(data, how, name):
    (data / "evals.toml").write_text("eval_samples = 10\n")
    how = [str(data / h) if h.endswith(".toml") else h for h in how]
    out = data / f"run-loop-{name}"
    got = mpi_train(data, 2, "--train", str(data / "train.txt"), "--test", str(data / "test.txt"), "--out", str(out),
                    "--epochs", "1", *how)
    refused(got, name, "mpirun")
    assert not out.exists()


def test_the_built_in_problem_trains_under_mpi_in_the_batch_mode(tmp_path):
    got = mpi_train(tmp_path, 2, "--out", str(tmp_path / "run"), "--epochs", "1", "--train-samples", "600",
                    "--test-samples", "100")
    assert got.returncode == 0, got.stderr[-3000:]
    assert "batch mode (--mode batch)" in got.stdout
    assert json.loads((tmp_path / "run" / "config.json").read_text())["lsh"]["batch_active"] > 0


@pytest.mark.parametrize("how", [["--mode", "sample"], ["--set", "lsh.batch_active=0"]])
def test_the_per_sample_mode_asked_for_under_mpi_is_refused_naming_the_flags(tmp_path, how):
    got = mpi_train(tmp_path, 2, "--out", str(tmp_path / "run"), "--epochs", "1", *how)
    refused(got, "--mode batch", "--mode dense")


# ---------------------------------------------------------------------------- small shares

@pytest.mark.parametrize("points,ranks", [(4, 3), pytest.param(3, 3, marks=pytest.mark.slow), (2, 4)])
def test_a_validation_split_over_ranks_with_few_points_trains_and_does_not_hang(data, points, ranks):
    text = lines_of(data / "train.txt")
    small = data / f"small{points}.txt"
    small.write_text(f"{points} 50 40\n" + "".join(text[1:points + 1]))
    got = mpi_train(data, ranks, "--train", str(small), "--test", str(data / "test.txt"), "--out",
                    str(data / f"run-small{points}-{ranks}"), "--epochs", "2", "--validation-split", "0.5")
    assert got.returncode == 0, got.stderr[-3000:]
    assert got.stdout.count("val P@1") == 2


def test_a_validation_split_of_one_point_is_refused_on_every_rank(data):
    text = lines_of(data / "train.txt")
    (data / "one.txt").write_text("1 50 40\n" + text[1])
    got = mpi_train(data, 3, "--train", str(data / "one.txt"), "--test", str(data / "test.txt"), "--out",
                    str(data / "run-one"), "--epochs", "1", "--validation-split", "0.5")
    refused(got, "one.txt", "at least 2 training points")


def test_train_samples_takes_the_files_first_points_over_all_ranks(data):
    out = data / "run-limited"
    got = mpi_train(data, 3, "--train", str(data / "train.txt"), "--test", str(data / "test.txt"), "--out", str(out),
                    "--epochs", "1", "--train-samples", "50", "--validation-split", "0")
    assert got.returncode == 0, got.stderr[-3000:]
    assert "50 train points" in got.stdout


# ---------------------------------------------------------------------------- resuming

@pytest.fixture(scope="module")
def runs(data, tmp_path_factory) -> dict[str, Path]:
    """An MPI run and a single-process run of one epoch each, on copies of the data."""
    tmp = tmp_path_factory.mktemp("runs")
    for name in ("train.txt", "test.txt"):
        shutil.copy(data / name, tmp / name)
    files = ["--train", str(tmp / "train.txt"), "--test", str(tmp / "test.txt"), "--epochs", "1"]
    got = mpi_train(tmp, 2, *files, "--out", str(tmp / "mpi"))
    assert got.returncode == 0, got.stderr[-3000:]
    got = run(slide_cmd("train", *files, "--out", str(tmp / "single"), "--threads", "1", "--quiet"), tmp)
    assert got.returncode == 0, got.stderr[-3000:]
    return {"mpi": tmp / "mpi", "single": tmp / "single", "dir": tmp}


def test_an_mpi_run_records_its_data_fingerprints(runs):
    saved = json.loads((runs["mpi"] / "config.json").read_text())
    assert [Path(f["path"]).name for f in saved["data_files"]] == ["train.txt", "test.txt"]


def test_a_single_process_does_not_resume_an_mpi_run(runs):
    before = (runs["mpi"] / "metrics.jsonl").read_text()
    got = run(slide_cmd("train", "--resume", str(runs["mpi"]), "--epochs", "2", "--quiet"), runs["dir"])
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr[-3000:]
    assert f"mpirun -n 2 slide train --resume {runs['mpi']}" in got.stderr
    assert (runs["mpi"] / "metrics.jsonl").read_text() == before and not (runs["mpi"] / "model.npz").exists()


def test_mpi_does_not_resume_a_single_process_run(runs):
    before = (runs["single"] / "metrics.jsonl").read_text()
    got = run(launcher(2) + slide_cmd("train", "--resume", str(runs["single"]), "--epochs", "2", "--quiet"),
              runs["dir"])
    refused(got, f"slide train --resume {runs['single']}", "without mpirun")
    assert (runs["single"] / "metrics.jsonl").read_text() == before and not (runs["single"] / "model").exists()


@pytest.mark.parametrize("which,change", [("train.txt", "swap"), ("test.txt", "append"), ("train.txt", "gone")])
def test_mpi_resume_refuses_data_changed_since_the_run_started(runs, tmp_path, which, change):
    run_dir = tmp_path / "mpi"
    shutil.copytree(runs["mpi"], run_dir)
    path = runs["dir"] / which
    kept = path.read_bytes()
    try:
        if change == "swap":  # same size, other content
            text = lines_of(path)
            text[1], text[2] = text[2], text[1]
            path.write_text("".join(text))
        elif change == "append":
            path.write_bytes(kept + b"\n")
        else:
            path.unlink()
        got = run(launcher(2) + slide_cmd("train", "--resume", str(run_dir), "--epochs", "2", "--quiet"), tmp_path)
    finally:
        path.write_bytes(kept)
    refused(got, str(path), "gone" if change == "gone" else "changed since the run started")


def test_mpi_resume_on_other_ranks_says_how_once(runs, tmp_path):
    run_dir = tmp_path / "mpi"
    shutil.copytree(runs["mpi"], run_dir)
    got = run(launcher(3) + slide_cmd("train", "--resume", str(run_dir), "--epochs", "2", "--quiet"), tmp_path)
    refused(got, "holds 2 shards but this job has 3 ranks", "slide reshard")
