"""One writer per run folder. Two `slide train --resume RUN` at once would both train, interleave
their checkpoints and write every epoch's metrics twice; an `--overwrite` would delete a live
run's files. A writer holds an exclusive flock on RUN/.lock for as long as it writes. The kernel
drops a flock when its process dies, however it dies, so a lock left by a killed run never blocks
the next one; the file itself stays (removing it would let two processes lock two different
files of the same name), and holds the pid of its last holder, for the message."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from pathlib import Path
from typing import Iterable, Optional

from .no_follow import open_no_follow, refuse_links

log = logging.getLogger("slide")

LOCK = ".lock"


class RunInUse(ValueError):
    """Another process writes into the run folder; the message names the folder and the process."""


class RunLock:
    """A held lock on a run folder; released by `release`, at the end of a `with` block, or when
    the process ends."""

    def __init__(self, fd: int, run_dir: Path) -> None:
        self._fd: Optional[int] = fd
        self.run_dir = run_dir

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the last descriptor of the open file drops the flock

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()


def lock_run(run_dir: Path, *, refuse: Iterable[str] = ()) -> RunLock:
    """Lock the existing folder `run_dir` for writing, or raise RunInUse naming it and the process
    that holds it. With `refuse`, those entries of the folder must not be symbolic links (checked
    once the lock is held, so no other slide process changes them meanwhile)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run folder at {run_dir}")
    fd = open_no_follow(run_dir / LOCK, os.O_RDWR | os.O_CREAT, "run folder")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):  # a filesystem without locks: say so, go on
            log.warning("could not lock %s (%s); make sure no other slide process writes into it", run_dir,
                        e.strerror)
            return RunLock(fd, run_dir)
        holder = _holder(fd)
        os.close(fd)
        raise RunInUse(f"{run_dir} is in use by another slide process ({holder}, holding {run_dir / LOCK}); two "
                       "writers would mix their checkpoints and metrics: wait for it to finish or stop it") from None
    lock = RunLock(fd, run_dir)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        refuse_links(run_dir, refuse, "run folder")
    except BaseException:
        lock.release()
        raise
    return lock


def _holder(fd: int) -> str:
    """Who holds the lock, as its pid file says (the holder writes it just after locking)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return f"process {text}" if text.isdigit() else "a process that has not yet said which"
