"""Where a network runs: one process, or an MPI job's ranks. The network and the training loop are
given one of these two strategies and ask it how big each rank's batch is, how many steps every
rank takes, how to count rows across ranks, how to rank the whole output layer and how to save;
neither branches on MPI itself."""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional


log = logging.getLogger("slide")


class SingleProcess:
    """A network in one process: the whole output layer here."""

    comm = None
    speaks = True  # this process prints what the job says

    def rank_batches(self, n: Optional[int], batch_size: int) -> tuple[int, Optional[int]]:
        """(rows per step here, the steps every rank must take or None)."""
        return batch_size, None

    def on_every_rank(self, fn: Callable, *args: Any) -> Any:
        return fn(*args)

    def total(self, value: float) -> float:
        return value

    def mean(self, report: dict[str, float], rows: int) -> dict[str, float]:
        return report

    def top_k(self, net: Any, X: Any, k: int, dense: bool, normaliser: bool = False, scan: str = "auto") -> tuple:
        """(ids, scores) of the top k (and the log-normaliser with `normaliser`, exact only). `scan`:
        the engine's dense scan ("auto" exact; "bf16" from BF16 products where they are native)."""
        if normaliser:
            return tuple(net._core.predict(X.indptr, X.indices, X.data, k, True, True))
        return tuple(net._core.predict(X.indptr, X.indices, X.data, k, dense, scan=scan, cache=net._scan_cache))

    def save(self, net: Any, path: Any, *, include_optimizer: bool, extra: Optional[dict]) -> None:
        from ..model_file import save_network

        save_network(net, path, include_optimizer=include_optimizer, extra=extra)


class Ranks:
    """A network over an MPI job's ranks: each holds a block of the output layer's rows (its
    weights, optimizer state and LSH tables); the layers below are replicated; every data argument
    is the calling rank's own share of the rows, and every rank makes the same calls."""

    def __init__(self, comm: Any) -> None:
        from .communicator import Communicator

        self.comm = comm if isinstance(comm, Communicator) else Communicator(comm)
        self.speaks = self.comm.rank == 0

    def output_shard(self, output_dim: int) -> tuple[int, int]:
        """(first output row, rows) this rank holds."""
        from .shards import shard_range

        return shard_range(output_dim, self.comm.size, self.comm.rank)

    def rank_batches(self, n: Optional[int], batch_size: int) -> tuple[int, Optional[int]]:
        """This rank's share of each batch, and the batches every rank must take part in: the most
        any rank's `n` rows make."""
        from .shards import batch_share

        rank_batch = batch_share(batch_size, self.comm.size, self.comm.rank)
        return rank_batch, self.comm.largest(-(-n // rank_batch))

    def on_every_rank(self, fn: Callable, *args: Any) -> Any:
        """fn(*args) here; a rank whose data is refused stops every rank with an error naming it,
        instead of leaving the others waiting for it in the next collective call."""
        try:
            out, error = fn(*args), None
        except (ValueError, FileNotFoundError) as e:
            out, error = None, e
        problems = self.comm.gather_objects(None if error is None else str(error))
        if error is not None:
            raise error
        refused = [(r, p) for r, p in enumerate(problems) if p]
        if refused:
            raise ValueError(f"rank {refused[0][0]} refused its data: {refused[0][1]}")
        return out

    def total(self, value: float) -> float:
        return self.comm.total(value)

    def mean(self, report: dict[str, float], rows: int) -> dict[str, float]:
        """Every rank's per-sample means averaged over every rank's samples, each counted once."""
        n = self.comm.total(rows)
        return {name: self.comm.total(value * rows) / max(n, 1.0) for name, value in report.items()}

    def top_k(self, net: Any, X: Any, k: int, dense: bool, normaliser: bool = False, scan: str = "auto") -> tuple:
        from .top_k import predict as predict_over_ranks

        out = predict_over_ranks(net, X, k, dense or normaliser, normaliser=normaliser, scan=scan)
        return out if normaliser else out[:2]

    def save(self, net: Any, path: Any, *, include_optimizer: bool, extra: Optional[dict]) -> None:
        from .checkpoint import save_shards  # a folder: one file per rank and a manifest

        save_shards(net, path, include_optimizer=include_optimizer, extra=extra)


def strategy_for(comm: Any, mode: str, neighbours: int, rerank: int = 0) -> Any:
    """SingleProcess without `comm`; otherwise Ranks over it, for a mode that can shard its output."""
    if comm is None:
        return SingleProcess()
    if mode == "sample":
        raise ValueError("mode='sample' trains an active set per sample and cannot shard its output layer over "
                         "MPI ranks; use mode='batch' (the default) or 'dense'")
    ranks = Ranks(comm)
    if neighbours and ranks.speaks:
        log.warning("the neighbours' vote is not used under MPI (each rank holds only its share of the training "
                    "points)" + ("; the re-ranker trains over the ranks" if rerank else
                                 "; predictions come from the network alone"))
    return ranks


__all__ = ["SingleProcess", "Ranks", "strategy_for"]
