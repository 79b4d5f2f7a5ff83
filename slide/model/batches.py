"""The batch loop under every kind of training: rows in a given order, a batch at a time, into the
engine; divergence and Ctrl-C are caught between batches, so the caller knows exactly how far it got."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Union

import numpy as np

from .data import TrainingData
from .errors import TrainingDiverged, TrainingInterrupted

LearningRate = Union[float, Callable[[int], float]]


def train_batches(engine: Any, data: TrainingData, rows: np.ndarray, *, batch_size: int, lr: LearningRate,
                  bar=None, on_batch=None, steps: Optional[int] = None) -> dict[str, float]:
    """Train `engine` on data's `rows`, in that order, `batch_size` at a time (see Network.train_rows)."""
    arrays = (data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices)
    totals = {"loss": 0.0, "samples": 0, "active": 0}
    t0, done = time.perf_counter(), 0
    try:
        starts = list(range(0, len(rows), batch_size))
        starts += [len(rows)] * max(0, (steps or 0) - len(starts))
        for b, start in enumerate(starts):
            batch = rows[start:start + batch_size]
            rate = lr(b) if callable(lr) else lr
            stats = engine.train_batch(*arrays, batch, rate)
            _check_finite(engine, stats, rate, start)
            done = start + len(batch)
            for k in totals:
                totals[k] += stats[k]
            if on_batch is not None:
                labelled = max(stats["samples"], 1)
                on_batch(engine.step, {"loss": stats["loss"] / labelled, "samples": stats["samples"],
                                       "active_per_sample": stats["active"] / labelled, "learning_rate": rate})
            if bar is not None:
                _show(bar, len(batch), b, totals, done, t0)
    except KeyboardInterrupt:
        raise TrainingInterrupted(done, totals) from None
    return totals


def _check_finite(engine: Any, stats: dict, rate: float, rows_done: int) -> None:
    if stats["nonfinite_rows"] or not np.isfinite(stats["loss"]):
        raise TrainingDiverged(
            f"training diverged at step {engine.counters()['step']}: "
            + (f"{stats['nonfinite_rows']:,} parameter rows hold NaN or inf after the update"
               if stats["nonfinite_rows"] else f"the batch's loss is {stats['loss']}")
            + f" (learning rate {rate:g}); lower the learning rate", rows_done=rows_done)


def _show(bar: Any, rows: int, b: int, totals: dict, done: int, t0: float) -> None:
    bar.update(rows)
    if b % 10 == 0:
        bar.set_postfix(loss=f"{totals['loss'] / max(totals['samples'], 1):.4f}",
                        samples_s=f"{done / max(time.perf_counter() - t0, 1e-9):,.0f}",
                        active=f"{totals['active'] / max(totals['samples'], 1):,.0f}")
