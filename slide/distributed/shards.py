"""Which rows of the output layer each rank holds: contiguous near-equal blocks, rank r the r-th.
One definition, used by the network, its checkpoints and the re-shard tool."""

from __future__ import annotations


def shard_range(total: int, ranks: int, rank: int) -> tuple[int, int]:
    """(first row, rows) of rank `rank`'s block of `total` output rows over `ranks` ranks."""
    if not 0 <= rank < ranks:
        raise ValueError(f"rank {rank} is not in [0, {ranks})")
    if total < ranks:
        raise ValueError(f"an output layer of {total} labels cannot be split over {ranks} ranks: every rank "
                         "must hold at least one row")
    first = total * rank // ranks
    return first, total * (rank + 1) // ranks - first


def batch_share(batch_size: int, ranks: int, rank: int) -> int:
    """Rank `rank`'s part of a batch of `batch_size` samples over `ranks` ranks (at least one)."""
    return max(1, batch_size * (rank + 1) // ranks - batch_size * rank // ranks)
