"""The command line end to end, in a subprocess."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest


def run(*args, cwd=None):
    # Never from the source tree: `python -m` puts the working directory first on sys.path.
    return subprocess.run([sys.executable, "-m", "slide", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd or os.path.expanduser("~"))


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("slide ")


def test_train_default_writes_model_and_metrics(tmp_path):
    r = run("train", "--quiet", "--epochs", "2", "--threads", "2", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    assert "test (exact): P@1" in r.stdout
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["test"]["P@1"] > 0.3
    assert (tmp_path / "run" / "model.npz").exists()


def test_usage_error_exit_code():
    r = run("train", "--dataset", "nope")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_value_error_is_a_message_not_a_traceback():
    r = run("train", "--threads", "0")
    assert r.returncode == 2
    assert "slide: error: threads must be >= 1" in r.stderr and "Traceback" not in r.stderr


def test_ctrl_c_stops_at_a_batch_boundary_with_the_model_intact(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "slide", "train", "--epochs", "200", "--threads", "1",
                          "--out", str(tmp_path / "run")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.time() + 120
    line = ""
    while "Network(" not in line and time.time() < deadline:  # wait until training starts
        line = p.stdout.readline()
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "interrupted" in err
    assert "test (exact): P@1" in out  # the interrupted model still evaluates
    assert (tmp_path / "run" / "model.npz").exists()
