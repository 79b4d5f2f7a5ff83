"""Choices of training rows made over the whole file when each rank holds only its share of it:
the rows are numbered across the ranks in file order, so a run picks the rows one process reading
the whole file would pick, and every rank takes part in the same collective steps whatever its
share (a rank with no rows to hold out still evaluates, so none waits for it)."""

from __future__ import annotations

from typing import Any, Optional

from ..datasets.synthetic import Split
from ..early_stopping import held_out_rows
from .agree import RankError


def _offset(comm: Any, rows: int) -> tuple[int, int]:
    """(the first row of this rank's share across the job, rows in all)."""
    counts = comm.gather_objects(int(rows))
    return sum(counts[:comm.rank]), sum(counts)


def first_rows(share: Split, n: Optional[int], comm: Any) -> Split:
    """This rank's part of the file's first `n` points (None: all of them); collective."""
    if n is None:
        return share
    start, _ = _offset(comm, len(share))
    keep = min(len(share), max(0, n - start))
    return Split(share.X[:keep], share.Y[:keep])


def held_out_share(share: Split, fraction: float, seed: int, what: str, comm: Any) -> tuple[Split, Split]:
    """(training, validation) rows of this rank's share: the rows a single process would hold out
    of the whole file, seeded alike; collective. `what` names the data in errors."""
    start, total = _offset(comm, len(share))
    if total < 2:
        raise RankError(f"{what}: a validation split needs at least 2 training points, and the file has {total}", 0)
    kept, held = held_out_rows(total, fraction, seed)
    mine = lambda rows: rows[(rows >= start) & (rows < start + len(share))] - start  # noqa: E731
    kept, held = mine(kept), mine(held)
    return Split(share.X[kept], share.Y[kept]), Split(share.X[held], share.Y[held])


def check_rows(share: Split, what: str, comm: Any) -> None:
    """RankError on every rank when the job has no points at all to train on."""
    if not any(comm.gather_objects(len(share) > 0)):
        raise RankError(f"{what} has no training points", 0)

