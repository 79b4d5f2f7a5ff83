"""A run folder's files: the resolved config, metrics.jsonl, the lock, and what may be in it.
Every file is written atomically or appended a line at a time, and none is read through a link."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from ..atomic_files import atomic_write
from ..best_epoch import BEST
from ..file_schemas import METRICS_RECORD, check, check_run_config
from ..json_files import is_regular_or_absent, read_json, read_json_lines
from ..no_follow import append_text, truncate_file
from ..run_lock import LOCK, RunLock, lock_run
from ..training.position import Position

log = logging.getLogger("slide")

CHECKPOINT = "checkpoint.npz"
MODEL = "model.npz"
METRICS = "metrics.jsonl"
CONFIG = "config.json"
PLOT = "progress.png"


def rewind_metrics(run_dir: Path, pos: Position) -> None:
    """Drop what a killed run wrote after its checkpoint (records a resume writes again, and a torn
    last line), so metrics.jsonl reads as one run that never stopped."""
    metrics = run_dir / METRICS
    if pos.metrics_bytes is None:  # a checkpoint from before positions recorded it: keep everything
        return
    if metrics.is_symlink() or (metrics.exists() and metrics.stat().st_size > pos.metrics_bytes):
        truncate_file(metrics, pos.metrics_bytes, "run folder")  # refuses a link, whatever its size


RUN_FILES = (CONFIG, METRICS, CHECKPOINT, MODEL, PLOT, BEST)


def lock_run_dir(run_dir: Path) -> RunLock:
    """The lock of an existing run folder, for a process about to write into it (run_lock); its
    run files must not be symbolic links."""
    return lock_run(run_dir, refuse=RUN_FILES)


def _run_files_in(run_dir: Path) -> list[str]:
    """The run's files in `run_dir` (the lock file is not one: it outlives every run); ValueError
    when the folder holds anything else."""
    present = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK)
    ours = [name for name in present if name in RUN_FILES or name.startswith(tuple(f".{f}." for f in RUN_FILES))]
    if present and len(ours) < len(present):
        raise ValueError(f"--out {run_dir} is a folder that holds other files ({', '.join(present[:3])}...); "
                         "a run folder must be new or empty")
    return ours


def create_run_dir(run_dir: Path, *, overwrite: bool = False) -> RunLock:
    """Make a fresh run folder and return its lock, held (run_lock): keep it while the run writes.
    An existing run is never reused silently: it is refused (resume it with --resume) unless
    `overwrite`, which deletes its run files and nothing else, and only once the lock is held (a
    run in use is refused); a non-empty folder that is not a run is refused either way."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"--out {run_dir} is a file, not a folder")
    if run_dir.is_dir():
        _run_files_in(run_dir)  # before the lock file is made: a user's folder is left as it was
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = lock_run(run_dir)
    try:
        ours = _run_files_in(run_dir)
        if ours and not overwrite:
            raise ValueError(f"{run_dir} already holds a run; continue it with `slide train --resume {run_dir}`, "
                             "or pass --overwrite to start it afresh (deletes its checkpoint, model and metrics)")
        for name in ours:
            (run_dir / name).unlink()  # a link goes, its target stays
    except BaseException:
        lock.release()
        raise
    return lock



def append_metrics(run_dir: Path, record: dict) -> None:
    with append_text(run_dir / METRICS, "run folder") as f:  # one line per record: a kill costs a torn last line
        f.write(json.dumps(record) + "\n")
        f.flush()


def read_metrics(run_dir: "str | os.PathLike[str]") -> list[dict]:
    """The records of metrics.jsonl that match their schema (file_schemas.METRICS_RECORD); any
    other line is skipped with a warning naming it, since one bad line must not cost the rest."""
    path = Path(run_dir) / METRICS
    if not is_regular_or_absent(path, "metrics log"):
        return []
    out = []
    for number, record in read_json_lines(path, "metrics log"):
        if record is None:
            continue  # not JSON: read_json_lines has said so (or it is a torn last line)
        try:
            out.append(check(record, METRICS_RECORD, f"{path}:{number}"))
        except ValueError as e:
            log.warning("%s; skipped", e)
    return out



def write_config(run_dir: Path, config: dict) -> None:
    payload = (json.dumps(config, indent=2) + "\n").encode()
    atomic_write(run_dir / CONFIG, lambda f: f.write(payload))


def read_config(run_dir: "str | os.PathLike[str]") -> dict:
    """The run's settings, checked against their declared schema (file_schemas.RUN_CONFIG); a
    FIFO or a device in its place is refused before it is opened."""
    path = Path(run_dir) / CONFIG
    if not is_regular_or_absent(path, "run configuration"):
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {CONFIG})")
    return check_run_config(read_json(path, "run configuration"), str(path))
