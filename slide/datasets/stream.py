"""`Stream`: training data read from a shard folder one shard at a time, the next shard read,
checked and prepared on a background thread while the engine trains on the current one, so data
larger than memory trains at in-memory speed.

Shuffling is at two levels, both seeded by (seed, epoch): the order of the shards, and the rows
inside each shard. Batches never depend on where shards end: the rows that do not fill a last
batch of one shard open the next one, so with shuffling off a stream trains exactly as the same
data in memory does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import numpy as np

from .prefetch import prefetched
from .shards import ShardFolder, arrays_to_split, concatenate, empty_arrays
from .synthetic import Split


@dataclass
class Segment:
    """One step of a streamed epoch: `data` (what `prepare` made of the rows) trained in `order`."""

    index: int
    data: Any
    order: np.ndarray


def select_rows(arrays: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    """The given rows of a CSR block, in that order, as a block of their own."""
    out = {}
    for kind in ("x", "y"):
        indptr = arrays[f"{kind}_indptr"]
        lengths = indptr[rows + 1] - indptr[rows]
        out[f"{kind}_indptr"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        picked = np.repeat(indptr[rows] - out[f"{kind}_indptr"][:-1], lengths) + np.arange(lengths.sum())
        out[f"{kind}_indices"] = arrays[f"{kind}_indices"][picked]
        if kind == "x":
            out["x_data"] = arrays["x_data"][picked]
    return out


class Stream:
    """Training data in a shard folder (`slide data convert FILE DIR`), read shard by shard.

    Pass it to `Network.fit` in place of X (with Y omitted) to train on data larger than memory;
    iterate it for its shards as (X, Y) pairs in file order.

    Args:
        path: a folder written by `slide data convert` or `slide.datasets.convert_xc`.
        shuffle: each epoch, visit the shards in a new order and shuffle the rows inside each.
        seed: seeds both shuffles (with the epoch), so a run is reproducible.
        prefetch: shards read ahead of the one training (1 = double buffering).
    """

    def __init__(self, path: "os.PathLike[str] | str", *, shuffle: bool = True, seed: int = 0, prefetch: int = 1
                 ) -> None:
        if prefetch < 1:
            raise ValueError(f"prefetch must be at least 1, got {prefetch}")
        self.folder = ShardFolder.open(path)
        self.shuffle, self.seed, self.prefetch = bool(shuffle), int(seed), int(prefetch)
        starts = np.cumsum([0] + [s["rows"] for s in self.folder.shards])
        self._first_row = starts[:-1]
        self._held_out: Optional[np.ndarray] = None

    @property
    def num_points(self) -> int:
        return self.folder.num_points

    @property
    def num_features(self) -> int:
        return self.folder.num_features

    @property
    def num_labels(self) -> int:
        return self.folder.num_labels

    @property
    def samples_per_epoch(self) -> int:
        held = 0 if self._held_out is None else int(self._held_out.sum())
        return self.num_points - held

    def __len__(self) -> int:
        return self.samples_per_epoch

    def __repr__(self) -> str:
        return (f"Stream({str(self.folder.path)!r}: {self.num_points:,} points in {len(self.folder)} shards, "
                f"{self.num_features:,} features, {self.num_labels:,} labels, shuffle={self.shuffle})")

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for i in range(len(self.folder)):
            split = self.folder.read(i)
            yield split.X, split.Y

    def hold_out(self, rows: np.ndarray) -> Split:
        """Take these rows (ids over the whole folder) out of training and return them, read from
        the shards that hold them; epochs then skip them."""
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        if rows.size and (rows[0] < 0 or rows[-1] >= self.num_points):
            raise ValueError(f"held-out rows must lie in [0, {self.num_points})")
        mask = np.zeros(self.num_points, bool)
        mask[rows] = True
        parts = []
        for i, first in enumerate(self._first_row):
            local = rows[(rows >= first) & (rows < first + self.folder.shards[i]["rows"])] - first
            if local.size:
                parts.append(select_rows(self.folder.read_arrays(i), local))
        self._held_out = mask
        arrays = concatenate(parts) if parts else empty_arrays()
        return arrays_to_split(arrays, self.num_features, self.num_labels)

    def shard_order(self, epoch: int) -> np.ndarray:
        n = len(self.folder)
        return np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle else np.arange(n)

    def segments(self, epoch: int, *, batch_size: int = 1, start: int = 0,
                 prepare: Optional[Callable[[Split], Any]] = None) -> Iterator[Segment]:
        """Epoch `epoch`'s segments from the `start`-th on (earlier ones are not yielded; only the
        one before is read, for the rows it hands on). Each segment's order is a whole number of
        batches except the epoch's last; `prepare` runs on the reading thread."""
        shards = self.shard_order(epoch)
        prepare = prepare or (lambda split: split)
        sizes = self._trained_rows()[shards]
        # Rows each position hands to the next: what does not fill a batch of the rows so far.
        tails = np.cumsum(sizes) % batch_size
        if len(tails):
            tails[-1] = 0
        # Resuming at `start` re-reads the shards whose rows it is handed (one, unless shards are
        # smaller than a batch); their own segments are not yielded again.
        first = max(start - 1, 0)
        while start and first > 0 and sizes[first:start].sum() < tails[start - 1]:
            first -= 1

        def produce() -> Iterator[Segment]:
            carry: Optional[dict[str, np.ndarray]] = None
            for position in range(first, len(shards)):
                shard = int(shards[position])
                arrays = self.folder.read_arrays(shard)
                rows = np.arange(self.folder.shards[shard]["rows"])
                if self.shuffle:
                    rows = np.random.default_rng([self.seed, epoch, shard]).permutation(rows)
                if self._held_out is not None:
                    rows = rows[~self._held_out[self._first_row[shard] + rows]]
                if carry is not None:
                    carried = len(carry["x_indptr"]) - 1
                    arrays = concatenate([carry, arrays])
                    rows = np.concatenate([np.arange(carried), carried + rows])
                full = len(rows) - min(int(tails[position]), len(rows))
                carry = select_rows(arrays, rows[full:]) if full < len(rows) else None
                if position >= start:
                    yield Segment(position, prepare(arrays_to_split(arrays, self.num_features, self.num_labels)),
                                  rows[:full])

        return prefetched(produce(), depth=self.prefetch)

    @property
    def holds_every_point(self) -> bool:
        """Whether one shard holds every point, so that what is solved over all of them at once
        (the re-ranker's hinge, the label tree) can be: true of a stream of one shard."""
        return len(self.folder) == 1

    def one_shard_points(self) -> Optional[Split]:
        """Every training point (held-out rows skipped, in file order) when the stream
        `holds_every_point`; None when it has several shards."""
        if not self.holds_every_point:
            return None
        arrays = self.folder.read_arrays(0)
        if self._held_out is not None:
            arrays = select_rows(arrays, np.flatnonzero(~self._held_out))
        return arrays_to_split(arrays, self.num_features, self.num_labels)

    def _trained_rows(self) -> np.ndarray:
        """Rows each shard (by file index) contributes to an epoch."""
        sizes = np.array([s["rows"] for s in self.folder.shards], np.int64)
        if self._held_out is not None and len(sizes):
            sizes = sizes - np.add.reduceat(self._held_out, self._first_row).astype(np.int64)
        return sizes


def training_points(data: Any) -> tuple[Any, Any]:
    """(X, Y) for the calls that take training points in memory or a Stream as X with Y omitted
    (`Network.fit_fusion`, `fit_reranker`): a Stream as it is (it holds its labels), anything else
    by its X and Y (a Split, or the prepared data `fit` trains on)."""
    return (data, None) if isinstance(data, Stream) else (data.X, data.Y)
