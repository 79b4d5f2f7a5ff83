"""Judging epochs on held-out data: score, track the best, keep its parameters. Shared by `fit`
and the `slide train` run loop, so both pick, stop and restore the same way."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..early_stopping import BestTracker


class Validation:
    """Scores each epoch of `net` on (X, Y) by `monitor`, and calls `keep(net)` when it is the best
    so far. `state` is a BestTracker's saved state (a resumed run's)."""

    def __init__(self, net: Any, X: Any, Y: Any, *, monitor: str, patience: Optional[int], mode: str = "dense",
                 keep: Optional[Callable[[Any], None]] = None, state: Optional[dict] = None) -> None:
        self.net, self.X, self.Y, self.monitor, self.mode, self.keep = net, X, Y, monitor, mode, keep
        self.tracker = BestTracker(**{**(state or {}), "monitor": monitor, "patience": patience})

    def judge(self, epoch: int) -> tuple[dict, bool]:
        """(the epoch's validation report, whether it is the best so far)."""
        report = self.net.evaluate(self.X, self.Y, mode=self.mode)
        if self.monitor == "loss":
            report["loss"] = self.net.loss(self.X, self.Y)
        improved = self.tracker.update(report, epoch)
        if improved and self.keep is not None:
            self.keep(self.net)
        return report, improved

    @property
    def should_stop(self) -> bool:
        return self.tracker.should_stop
