"""The ranks of an MPI job as the engine sees them (cpp/distributed/collective.h), over mpi4py.

Open MPI moves the bytes; this class only shapes the calls. Sums are reduce-scatter followed by
allgather (the ring all-reduce's two halves), so each block is added up once, on one rank, and
every rank receives the same bits: replicated layers cannot drift apart by rounding. Every call
counts what this rank hands to MPI and what a ring algorithm would put on its link, for the
scaling benchmark (benches/mpi_scaling.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Traffic:
    """Bytes this rank's collectives moved since the last reset, by the ring model: an allgather
    of a rank's `b` bytes costs it (N-1) x the others' bytes received and as many sent on a ring;
    a reduce-scatter of `n` bytes (N-1)/N x n; an allreduce both halves, 2 (N-1)/N x n."""

    calls: int = 0
    payload: int = 0          # bytes this rank handed to MPI
    ring_bytes: float = 0.0   # bytes a ring algorithm sends from this rank
    by_kind: dict[str, float] = field(default_factory=dict)

    def add(self, kind: str, payload: int, ring: float) -> None:
        self.calls += 1
        self.payload += payload
        self.ring_bytes += ring
        self.by_kind[kind] = self.by_kind.get(kind, 0.0) + ring


class Communicator:
    """An mpi4py communicator with the collectives the engine calls. `comm` is any mpi4py
    intracommunicator (``MPI.COMM_WORLD`` or a split of it)."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI  # optional dependency: pip install "slide[mpi]"

        if not isinstance(comm, MPI.Intracomm):
            raise ValueError(f"comm must be an mpi4py intracommunicator such as MPI.COMM_WORLD, got {comm!r}")
        self.MPI = MPI
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.traffic = Traffic()

    # ------------------------------------------------------------------ the engine's calls
    def sum(self, data: np.ndarray) -> None:
        """In place: every element summed over ranks, the same bits on every rank."""
        n = data.size
        counts = [n * (r + 1) // self.size - n * r // self.size for r in range(self.size)]
        mine = np.empty(counts[self.rank], dtype=data.dtype)
        self.comm.Reduce_scatter(data, mine, recvcounts=counts, op=self.MPI.SUM)
        self.comm.Allgatherv(mine, [data, counts])
        share = (self.size - 1) / self.size * data.nbytes
        self.traffic.add("allreduce", data.nbytes, 2 * share)

    def max(self, data: np.ndarray) -> None:
        self.comm.Allreduce(self.MPI.IN_PLACE, data, op=self.MPI.MAX)
        self.traffic.add("allreduce", data.nbytes, 2 * (self.size - 1) / self.size * data.nbytes)

    def sum_scatter(self, data: np.ndarray, counts: list[int], out: np.ndarray) -> None:
        self.comm.Reduce_scatter(data, out[:counts[self.rank]], recvcounts=list(counts), op=self.MPI.SUM)
        self.traffic.add("reduce_scatter", data.nbytes, (self.size - 1) / self.size * data.nbytes)

    def gather(self, data: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """Every rank's bytes in rank order, and how many each gave."""
        counts = self.comm.allgather(int(data.nbytes))
        out = np.empty(sum(counts), dtype=np.uint8)
        self.comm.Allgatherv(data.view(np.uint8), [out, counts])
        self.traffic.add("allgather", data.nbytes, sum(counts) - counts[self.rank])
        return out, counts

    # ------------------------------------------------------------------ the Python layer's calls
    def total(self, value: float) -> float:
        """The sum over ranks of a number."""
        return float(self.comm.allreduce(float(value), op=self.MPI.SUM))

    def largest(self, value: int) -> int:
        return int(self.comm.allreduce(int(value), op=self.MPI.MAX))

    def all_agree(self, ok: bool) -> bool:
        """True when `ok` on every rank: a rank that found a problem makes every rank stop with it."""
        return bool(self.comm.allreduce(bool(ok), op=self.MPI.LAND))

    def gather_objects(self, value: Any) -> list[Any]:
        return self.comm.allgather(value)

    def broadcast(self, value: Any, root: int = 0) -> Any:
        return self.comm.bcast(value, root=root)

    def barrier(self) -> None:
        self.comm.Barrier()

    def abort(self, code: int = 1) -> None:
        """End every rank of the job now (MPI_Abort): what a rank does when it cannot go on, so
        the others do not wait for it forever."""
        self.comm.Abort(code)
