"""Keeping the best model of a training run: which validation metric decides, when a run has
stopped improving, and a copy of the parameters to go back to. Used by `Network.fit` and by the
`slide train` run loop, so both stop and restore the same way."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

import numpy as np

from . import small_pages
from .optimizers import is_optimizer_state



def held_out_rows(n: int, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, validation rows): a seeded random `share` of n rows held out, at least one
    row on each side, both sorted."""
    if n < 2:
        raise ValueError(f"a validation split needs at least 2 training samples, got {n}")
    held = min(max(int(round(n * share)), 1), n - 1)
    rows = np.random.default_rng([seed, 0x5A17]).permutation(n)
    return np.sort(rows[held:]), np.sort(rows[:held])


def monitors(ks: Sequence[int]) -> tuple[str, ...]:
    """The metrics a run can be judged by, for evaluation ranks ks."""
    return (*(f"P@{k}" for k in ks), *(f"nDCG@{k}" for k in ks), "loss")


def check_monitor(monitor: str, ks: Sequence[int]) -> None:
    if monitor not in monitors(ks):
        raise ValueError(f"monitor must be one of {', '.join(monitors(ks))}; got {monitor!r}")


def is_better(monitor: str, score: float, than: float) -> bool:
    """Whether `score` beats `than` by `monitor`: lower for the loss, higher for a ranking metric."""
    return score < than if monitor == "loss" else score > than


@dataclass
class BestTracker:
    """The best validation score so far and how many evaluations have passed without beating it.

    `monitor` is a ranking metric (higher is better) or "loss" (lower is better). `patience` is the
    number of evaluations without improvement after which training should stop; None never stops.
    """

    monitor: str = "P@1"
    patience: Optional[int] = None
    best: Optional[float] = None
    best_at: Optional[int] = None  # the epoch (or sample count) of the best evaluation
    since_best: int = 0

    def update(self, metrics: dict, at: int) -> bool:
        """Record one evaluation; True when it is the best so far (ties keep the earlier one)."""
        score = float(metrics[self.monitor])
        better = self.best is None or is_better(self.monitor, score, self.best)
        if better:
            self.best, self.best_at, self.since_best = score, at, 0
        else:
            self.since_best += 1
        return better

    @property
    def should_stop(self) -> bool:
        return self.patience is not None and self.since_best >= self.patience

    def state(self) -> dict:
        return asdict(self)


def parameter_names(net: Any) -> list[str]:
    """The arrays that make the model (weights and biases), not optimizer state, gradients or tables."""
    return [name for name in net.weights()
            if not name.endswith("_grad") and not is_optimizer_state(name) and ".lsh." not in name]


def snapshot(net: Any, into: Optional[dict[str, np.ndarray]] = None) -> dict[str, np.ndarray]:
    """A copy of the model's parameters (about a third of what the network holds with Adam),
    written over `into` (an earlier snapshot of a network of the same shape, returned) where it
    fits. Validation snapshots the parameters several times an epoch, and copying into fresh
    arrays costs their new pages too: the 11 snapshots of a debian-deps run at hidden 256 (75 MB
    each) took 0.28-0.73 s into new arrays and 0.13-0.15 s into kept ones (by script, 3 tries).
    New arrays are on small pages (`slide.small_pages`): they are only copied in and out."""
    state = net.weights()
    names = parameter_names(net)
    if into is not None and into.keys() == set(names) and all(
            into[name].shape == state[name].shape and into[name].dtype == state[name].dtype for name in names):
        for name in names:
            np.copyto(into[name], state[name])
        return into
    return {name: small_pages.copy(state[name]) for name in names}


def restore(net: Any, saved: dict[str, np.ndarray], tables: bool = True) -> None:
    """Put saved parameters back; the BF16 copies follow the restored weights, and with `tables`
    the LSH tables too (exact inference does not read them)."""
    state = net.weights()
    for name, values in saved.items():
        state[name][...] = values
    net.parameter_writes += 1  # the same step, other weights: what is derived from them is stale
    net._core.sync_low_precision()
    if tables:
        net._core.rebuild_tables()
