"""Checks that every rank of an MPI job makes together, so that a problem found on one rank stops
all of them with one message, instead of leaving the others waiting in the next collective call
(a hang) or training on without it (a silently wrong run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from ..datasets.fingerprint import fingerprint

T = TypeVar("T")
# What a rank may find wrong with its inputs; anything else is a bug and stops the job as such.
EXPECTED = (ValueError, FileNotFoundError, OSError)


class RankError(ValueError):
    """A problem every rank of the job knows about (raised on all of them with the same message):
    rank 0 reports it for the job. `rank` is the first rank that found it."""

    def __init__(self, message: str, rank: int) -> None:
        super().__init__(message)
        self.rank = rank


def on_every_rank(comm: Any, fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) on this rank; collective: when it fails on any rank, every rank raises RankError
    with the first failing rank's message."""
    try:
        out, problem = fn(*args), None
    except EXPECTED as e:  # a RankError too: were it re-raised here alone, the other ranks would wait for this one
        out, problem = None, str(e)
    fail(comm, problem)
    return out


def fail(comm: Any, problem: "str | None") -> None:
    """Collective: RankError on every rank when any rank has a problem (None: this one has none)."""
    problems = comm.gather_objects(problem)
    for rank, message in enumerate(problems):
        if message:
            where = "" if all(p == message for p in problems) else f" (found by rank {rank})"
            raise RankError(f"{message}{where}", rank)


def same_files(comm: Any, files: Iterable[tuple[str, Path]]) -> None:
    """Collective: RankError unless every rank sees the same content at each (what, path): ranks on
    different machines can read different copies under one name, and would train on both."""
    files = list(files)
    mine = on_every_rank(comm, lambda: [_identity(path) for _, path in files])
    everyone = comm.gather_objects(mine)
    for i, (what, path) in enumerate(files):
        seen = [ids[i] for ids in everyone]
        differ = [r for r, got in enumerate(seen) if got != seen[0]]
        if differ:
            raise RankError(f"the {what} {path} differs between ranks: rank {differ[0]} reads {_show(seen[differ[0]])}"
                            f" and rank 0 reads {_show(seen[0])}; every rank must read the same file (copy it to "
                            "every machine, or put it on a shared file system)", differ[0])


def _identity(path: Path) -> tuple[int, str]:
    got = fingerprint(path)
    return got["size"], got["sample_sha256"]


def _show(identity: tuple[int, str]) -> str:
    return f"{identity[0]:,} bytes (sha256 of its first and last MiB {identity[1][:12]})"
