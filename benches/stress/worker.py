"""Runs stress cases [start, start + count) in this process and prints one JSON line before and
after each, so the parent can tell a crash (the process died) or a hang (no line in time) from an
outcome. Outcomes: "ok", "refused" (a documented user error: ValueError, OSError,
MemoryError, TrainingDiverged, or a CLI exit code 2/3) and "traceback" (anything else escaping)."""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import traceback
import warnings
from pathlib import Path

import slide
from slide import cli
from slide.datasets import make_train_test
from slide.datasets.xc_files import write_xc

from ..case_runner import serve_cases
from .cases import CaseRandom, api_case, cli_argv, random_toml

EXPECTED = (ValueError, OSError, MemoryError, slide.TrainingDiverged)


def prepare(tmp: Path, seed: int) -> dict:
    """Tiny files, a FIFO, a folder, broken files, TOML files and two finished runs."""
    train, test = make_train_test(300, 60, 40, 30, seed=seed, avg_nnz=8, avg_labels=2)
    files = {"train": tmp / "train.txt", "test": tmp / "test.txt", "fifo": tmp / "fifo", "dir": tmp / "folder",
             "missing": tmp / "missing.txt", "broken": tmp / "broken.txt", "binary": tmp / "binary.bin"}
    write_xc(files["train"], train.X, train.Y)
    write_xc(files["test"], test.X, test.Y)
    if not files["fifo"].exists():
        os.mkfifo(files["fifo"])
    files["dir"].mkdir(exist_ok=True)
    files["broken"].write_text("3 40 30\n0 1:x\n")
    files["binary"].write_bytes(bytes(range(256)) * 4)
    rng = random.Random(seed)
    files["toml"] = []
    for i in range(40):
        path = tmp / f"run{i}.toml"
        path.write_text(random_toml(rng) if i else "epochs = 1\n[network]\nhidden = [8]\n[lsh]\nk = 2\nl = 4\n")
        files["toml"].append(path)
    files["runs"] = []
    for i in range(2):
        run_dir = tmp / f"base-run{i}"
        if not (run_dir / "model.npz").exists():
            shutil.rmtree(run_dir, ignore_errors=True)
            code = _quiet_cli(["train", "--quiet", "--train", str(files["train"]), "--test", str(files["test"]),
                               "--epochs", "1", "--threads", "1", "--out", str(run_dir)])[0]
            assert code == 0, "could not prepare a base run"
        files["runs"].append(run_dir)
    files["model"] = files["runs"][0] / "model.npz"
    return files


def _quiet_cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # argparse: usage errors (2) and --help (0)
            code = e.code if isinstance(e.code, int) else 2
    return code, err.getvalue()


def run_case(index: int, seed: int, tmp: Path, files: dict) -> dict:
    rng = CaseRandom(seed * 1_000_003 + index)
    kind = "cli" if rng.random() < 0.3 else "api"
    record = {"case": index, "kind": kind}
    try:
        if kind == "api":
            record["outcome"] = "ok"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    api_case(rng, tmp, index)()
            except EXPECTED as e:
                record.update(outcome="refused", error=f"{type(e).__name__}: {e}"[:300])
        else:
            argv = cli_argv(rng, tmp, index, files)
            record["argv"] = argv
            code, err = _quiet_cli(argv)
            record["exit"] = code
            record["outcome"] = {0: "ok", 2: "refused", 3: "refused"}.get(code, "traceback")
            if "Traceback" in err:
                record["outcome"] = "traceback"
            if code != 0:
                record["error"] = err.strip().splitlines()[-1][:300] if err.strip() else ""
    except BaseException as e:  # noqa: BLE001 - what escaped is the finding
        record.update(outcome="traceback", error="".join(traceback.format_exception(e))[-1500:])
    finally:
        for leftover in (tmp / f"run{index}", tmp / f"pred{index}.txt", tmp / f"m{index}.npz"):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            elif leftover.exists():
                leftover.unlink()
    return record


def main() -> None:
    serve_cases(prepare, run_case)


if __name__ == "__main__":
    main()
