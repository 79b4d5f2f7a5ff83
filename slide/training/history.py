"""What `Network.fit` measured, epoch by epoch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class History:
    """What `fit` measured: one dict per epoch (loss, samples/s, validation metrics, ...)."""

    epochs: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    best_epoch: Optional[int] = None       # with validation: the epoch with the best monitored metric
    best_score: Optional[float] = None     # and that metric's value
    stopped_early: bool = False            # early_stopping ended training before `epochs`
    restored_best: bool = False            # the network was set back to best_epoch's parameters
    # with averaging="swa" and a mean the best: the first epoch of the mean (best_epoch is its last)
    averaged_from: Optional[int] = None
    # with neighbours and validation: each fusion weight's validation score (neighbour_weight is the best's)
    neighbour_weight_scores: Optional[dict[float, float]] = None
    # after the last epoch: seconds spent on the vote's memory, the re-ranker and the weights that fuse them
    fusion_seconds: float = 0.0

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.epochs[i]

    def __len__(self) -> int:
        return len(self.epochs)
