"""Judging epochs on held-out data: score, track the best, keep its parameters, and (with an
`EpochAverage`) judge the mean of the epochs so far beside the network's own parameters. Shared
by `fit` and the `slide train` run loop, so both pick, stop, average and restore the same way."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..early_stopping import BestTracker, is_better
from ..epoch_average import EpochAverage


class Validation:
    """Scores each epoch of `net` on (X, Y) by `monitor`, and calls `keep(net)` when it is the best
    so far. `state` is a BestTracker's saved state (a resumed run's). With `average`, from its
    first epoch on the mean of the epochs so far is judged too, and the better of the two counts
    as the epoch's model (slide.epoch_average)."""

    def __init__(self, net: Any, X: Any, Y: Any, *, monitor: str, patience: Optional[int], mode: str = "dense",
                 keep: Optional[Callable[[Any], None]] = None, state: Optional[dict] = None,
                 average: Optional[EpochAverage] = None) -> None:
        self.net, self.X, self.Y, self.monitor, self.mode, self.keep = net, X, Y, monitor, mode, keep
        self.tracker = BestTracker(**{**(state or {}), "monitor": monitor, "patience": patience})
        self.average = average

    def judge(self, epoch: int) -> tuple[dict, bool]:
        """(the epoch's validation report, whether it is the best so far); the report holds
        ``averaged_from`` (the mean's first epoch) when the mean was the better of the two."""
        report = self._report()
        average = self.average
        if average is None or epoch < average.first:
            return report, self._update(report, epoch, mean=False)
        average.add(self.net)
        if average.count < 2:  # a mean of one epoch is the network itself
            return report, self._update(report, epoch, mean=False)
        with average.in_place_of_training(self.net, tables=self.mode == "sparse"):
            mean = self._report()
            if is_better(self.monitor, mean[self.monitor], report[self.monitor]):
                return {**mean, "averaged_from": average.first}, self._update(mean, epoch, mean=True)
        return report, self._update(report, epoch, mean=False)

    @property
    def best_is_average(self) -> bool:
        """Whether the best model judged was a mean of epochs (so the network does not hold it)."""
        return self.average is not None and self.average.best_is_mean

    def _report(self) -> dict:
        report = self.net.evaluate(self.X, self.Y, mode=self.mode)
        if self.monitor == "loss":
            report["loss"] = self.net.loss(self.X, self.Y)
        return report

    def _update(self, report: dict, epoch: int, mean: bool) -> bool:
        improved = self.tracker.update(report, epoch)
        if improved:
            if self.average is not None:
                self.average.best_is_mean = mean
            if self.keep is not None:
                self.keep(self.net)  # inside in_place_of_training for a mean: keeps the mean
        return improved

    @property
    def should_stop(self) -> bool:
        return self.tracker.should_stop
