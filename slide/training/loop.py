"""The training loop under `fit`, `partial_fit` and `slide train`: epochs of segments of rows,
each segment trained a piece at a time, the `Position` moved after every piece (and after the
rows a Ctrl-C left trained), so a caller can evaluate, checkpoint or stop between pieces and
resume exactly where it stopped."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ..model.data import TrainingData
from ..model.errors import TrainingInterrupted
from ..progress import progress_bar
from .position import Position
from .rate import rate_schedule
from .sources import TrainingSource

AfterPiece = Callable[[Position], None]


def _zero() -> dict[str, float]:
    return {"loss": 0.0, "samples": 0, "active": 0}


class TrainingLoop:
    """Trains `net` on `source` for `epochs` epochs in batches of `batch_size`.

    `piece_rows` (whole batches; None: a whole segment at once) is how often the caller's
    `after_piece` runs. `segment_steps` (MPI: the most batches any rank has) pads every segment
    with empty steps, since every rank takes part in every step. `total_steps` is the learning
    rate schedule's length (None: constant unless the network has `lr_schedule_steps`).
    """

    def __init__(self, net: Any, source: TrainingSource, *, epochs: int, batch_size: int,
                 piece_rows: Optional[int] = None, segment_steps: Optional[int] = None,
                 total_steps: Optional[int] = None, progress: bool = True, on_batch=None) -> None:
        self.net, self.source, self.epochs, self.batch_size = net, source, epochs, batch_size
        self.piece_rows, self.segment_steps, self.progress, self.on_batch = piece_rows, segment_steps, progress, on_batch
        self.rate = rate_schedule(net, total_steps)
        self.epoch_totals, self.epoch_seconds = _zero(), 0.0

    def run(self, pos: Position, after_piece: Optional[AfterPiece] = None) -> Iterator[Position]:
        """Train epoch after epoch from `pos` until `self.epochs` or `pos.stopped_early`, yielding
        `pos` after each epoch (the caller validates, records, and may stop). `epoch_totals` and
        `epoch_seconds` hold the epoch's loss totals and training time, also when a Ctrl-C
        (TrainingInterrupted, re-raised with `pos` moved past the rows trained) ends it early."""
        if pos.steps is None:  # an older checkpoint: its steps, as they were counted then
            pos.steps = pos.samples // self.batch_size
        while pos.epoch < self.epochs and not pos.stopped_early:
            self.epoch_totals, self.epoch_seconds = _zero(), 0.0
            bar = progress_bar(self.source.samples_per_epoch, f"epoch {pos.epoch + 1}/{self.epochs}", self.progress)
            try:
                for index, (data, order) in enumerate(self.source.segments(pos.epoch, pos.segment),
                                                      start=pos.segment):
                    self._segment(data, order, pos, bar, after_piece)
                    pos.segment, pos.row = index + 1, 0
            finally:
                if bar is not None:
                    bar.close()
            pos.epoch, pos.segment, pos.row = pos.epoch + 1, 0, 0
            yield pos

    def _segment(self, data: TrainingData, order: np.ndarray, pos: Position, bar, after_piece) -> None:
        if bar is not None and pos.row:
            bar.update(pos.row)
        piece = self.piece_rows or max(len(order), 1)
        batches_done = -(-pos.row // self.batch_size)
        while True:
            rows = order[pos.row:pos.row + piece]
            last = pos.row + len(rows) >= len(order)
            padding = self.segment_steps - batches_done if last and self.segment_steps is not None else None
            if not len(rows) and not padding:
                return
            batches = max(-(-len(rows) // self.batch_size), padding or 0)
            self._piece(data, rows, padding, pos, bar)
            batches_done += batches
            if after_piece is not None:
                after_piece(pos)
            if last:
                return

    def _piece(self, data: TrainingData, rows: np.ndarray, padding: Optional[int], pos: Position, bar) -> None:
        t0 = time.perf_counter()
        optional = {"on_batch": self.on_batch, "steps": padding}
        try:
            totals = self.net.train_rows(data, rows, batch_size=self.batch_size, lr=self.rate(pos.steps), bar=bar,
                                         **{k: v for k, v in optional.items() if v is not None})
        except TrainingInterrupted as stop:
            self._advance(pos, stop.rows_done, -(-stop.rows_done // self.batch_size), stop.totals, t0)
            raise
        self._advance(pos, len(rows), max(-(-len(rows) // self.batch_size), padding or 0), totals, t0)

    def _advance(self, pos: Position, rows: int, batches: int, totals: dict, t0: float) -> None:
        seconds = time.perf_counter() - t0
        pos.advance(rows, batches, totals, seconds)
        self.epoch_seconds += seconds
        for k in self.epoch_totals:
            self.epoch_totals[k] += totals[k]
