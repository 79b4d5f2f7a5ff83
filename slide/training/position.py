"""Where training is: the next row of a segment of an epoch, and what it has spent. The training
loop moves it; a run's checkpoint stores it (file_schemas.POSITION), so a resume starts exactly there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Position:
    """Where a run is: the next row of segment `segment` of epoch `epoch`."""

    epoch: int = 0
    segment: int = 0
    row: int = 0
    samples: int = 0            # trained so far, all epochs
    wall_seconds: float = 0.0   # training time so far (evaluation excluded)
    since_eval: int = 0
    loss_since_eval: float = 0.0
    labelled_since_eval: int = 0
    metrics_bytes: Optional[int] = 0  # length of metrics.jsonl when saved; None: unknown (older checkpoint)
    best: Optional[dict] = None  # the validation BestTracker's state
    average: Optional[dict] = None  # the EpochAverage's state, once begun (its mean is in average.npz)
    stopped_early: bool = False
    # What the run spent outside training, so the budget holds across a resume and can be reported.
    eval_seconds: float = 0.0
    evaluations: int = 0
    checkpoint_seconds: float = 0.0
    checkpoints: int = 0
    # Optimizer steps taken so far (the learning rate schedule's clock); None: an older checkpoint,
    # whose steps are counted as samples // batch size.
    steps: Optional[int] = None

    def advance(self, rows: int, batches: int, totals: dict, seconds: float) -> None:
        """`rows` more rows trained in `batches` steps and `seconds`, with the engine's loss totals."""
        self.row += rows
        self.samples += rows
        self.since_eval += rows
        self.steps = (self.steps or 0) + batches
        self.wall_seconds += seconds
        self.loss_since_eval += totals["loss"]
        self.labelled_since_eval += totals["samples"]
