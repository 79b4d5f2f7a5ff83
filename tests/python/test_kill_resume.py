"""SIGKILL at any moment, including in the middle of writing a checkpoint: `slide train --resume`
continues from the last complete checkpoint, and with one thread the finished model equals an
uninterrupted run's bit for bit (weights, optimizer state, LSH tables, step counters, RNGs)."""

import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from slide import runs

# Small pieces and a checkpoint after every one, so a good share of the run is spent writing
# checkpoints and random kills land inside them as well as inside training and evaluation.
ARGS = ["train", "--threads", "1", "--quiet", "--train-samples", "3000", "--test-samples", "300", "--epochs", "6",
        "--eval-every", "500", "--eval-samples", "100", "--checkpoint-every", "0"]
HOME = os.path.expanduser("~")  # never the source tree: `python -m` puts the cwd first on sys.path


def _cmd(*args):
    return [sys.executable, "-m", "slide", *map(str, args)]


def _arrays(path: Path) -> dict:
    with np.load(path) as z:
        return {k: z[k] for k in z.files if k != "__slide_header__"}


def _assert_same_model(a: Path, b: Path) -> None:
    wa, wb = _arrays(a), _arrays(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        np.testing.assert_array_equal(wa[name], wb[name], err_msg=name)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """(the uninterrupted run's model.npz, the seconds its process took, start-up included)."""
    out = tmp_path_factory.mktemp("reference") / "run"
    t0 = time.perf_counter()
    r = subprocess.run(_cmd(*ARGS, "--out", out), capture_output=True, text=True, timeout=300, cwd=HOME)
    assert r.returncode == 0, r.stderr
    return out / runs.MODEL, time.perf_counter() - t0


@pytest.fixture(scope="module")
def reference(reference_run):
    return reference_run[0]


def _resume_or_start(out: Path) -> list:
    """The first launch, or `--resume` (which also restarts a run killed before its first checkpoint)."""
    return _cmd("train", "--resume", out, "--quiet") if (out / runs.CONFIG).exists() else _cmd(*ARGS, "--out", out)


@pytest.mark.slow  # about 30 s; the default tier keeps the kill-in-the-middle-of-a-write cases
def test_random_sigkills_then_resume_end_bit_for_bit_equal(reference_run, tmp_path):
    reference, seconds = reference_run
    out = tmp_path / "run"
    rng = np.random.default_rng(12)
    kills = 0
    for attempt in range(30):
        p = subprocess.Popen(_resume_or_start(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=HOME)
        if kills < 6:
            try:  # within the run's own time on this machine: a fixed window let a fast one finish unkilled
                p.wait(timeout=float(rng.uniform(0.1, 0.4)) * seconds)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                continue
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        if (out / runs.MODEL).exists():
            break
    assert kills >= 3, "the run finished before it could be killed; the test no longer tests anything"
    _assert_same_model(out / runs.MODEL, reference)
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")], "stale temporary files were left"


KILL_MID_WRITE = """
import os, signal, sys
import numpy as np
from slide.cli import main
original, calls = np.savez, [0]
def savez(f, **arrays):
    calls[0] += 1
    if calls[0] == int(os.environ["KILL_AT_SAVE"]):
        original(f, **arrays)
        f.flush()
        f.truncate(f.tell() // 2)  # half of the new checkpoint is on disk
        os.kill(os.getpid(), signal.SIGKILL)
    return original(f, **arrays)
np.savez = savez
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("kill_at_save", [1, 4])
def test_sigkill_in_the_middle_of_writing_a_checkpoint(reference, tmp_path, kill_at_save):
    out = tmp_path / "run"
    first = subprocess.run([sys.executable, "-c", KILL_MID_WRITE, *ARGS, "--out", str(out)], capture_output=True,
                           text=True, timeout=300, cwd=HOME, env={**os.environ, "KILL_AT_SAVE": str(kill_at_save)})
    assert first.returncode == -signal.SIGKILL, first.stderr
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")], "the kill did not land mid-write"
    if kill_at_save == 1:
        assert not (out / runs.CHECKPOINT).exists()  # nothing complete yet: the run starts over
    else:
        runs.load_checkpoint(out)  # the previous checkpoint is complete and loadable
    r = subprocess.run(_resume_or_start(out), capture_output=True, text=True, timeout=300, cwd=HOME)
    assert r.returncode == 0, r.stderr
    _assert_same_model(out / runs.MODEL, reference)
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


# With a validation split whose best epoch (2) is not the last, so the end of the run puts the best
# epoch's parameters back: from memory in one run, from best.npz after a kill.
VALIDATED = [*ARGS[:ARGS.index("--epochs")], "--epochs", "4", *ARGS[ARGS.index("--epochs") + 2:],
             "--validation-split", "0.2"]


@pytest.fixture(scope="module")
def validated_reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("validated") / "run"
    r = subprocess.run(_cmd(*VALIDATED, "--out", out), capture_output=True, text=True, timeout=300, cwd=HOME)
    assert r.returncode == 0, r.stderr
    final = runs.read_metrics(out)[-1]
    assert final["kind"] == "final" and final["best_epoch"] < 4, "the best epoch is the last: nothing is restored"
    return out


@pytest.mark.parametrize("kill_at_save", [3, 6])
def test_a_killed_validated_run_resumes_to_the_same_best_model(validated_reference, tmp_path, kill_at_save):
    """best.npz is written with the checkpoints, before each one, so a resumed run restores the
    same best epoch as a run that was never killed."""
    out = tmp_path / "run"
    first = subprocess.run([sys.executable, "-c", KILL_MID_WRITE, *VALIDATED, "--out", str(out)], capture_output=True,
                           text=True, timeout=300, cwd=HOME, env={**os.environ, "KILL_AT_SAVE": str(kill_at_save)})
    assert first.returncode == -signal.SIGKILL, first.stderr
    r = subprocess.run(_cmd("train", "--resume", out, "--quiet"), capture_output=True, text=True, timeout=300,
                       cwd=HOME)
    assert r.returncode == 0, r.stderr
    _assert_same_model(out / runs.MODEL, validated_reference / runs.MODEL)
    assert runs.read_metrics(out)[-1]["best_epoch"] == runs.read_metrics(validated_reference)[-1]["best_epoch"]


def test_best_npz_holds_the_best_epochs_parameters(validated_reference):
    from slide import Network
    from slide.early_stopping import parameter_names

    best, model = Network.load(validated_reference / "best.npz"), Network.load(validated_reference / runs.MODEL)
    for name in parameter_names(model):
        np.testing.assert_array_equal(best.weights()[name], model.weights()[name], err_msg=name)
