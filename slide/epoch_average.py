"""Stochastic weight averaging over epochs (the ``averaging="swa"`` setting): from the epoch after
the first quarter of a run on, validation judges two models at each epoch end, the network's own
parameters and the mean of its parameters at the ends of the epochs since that quarter, and keeps
whichever is better; the run ends with the best model judged, so with the mean when it wins.
Training goes on from its own parameters; only judging, keeping and the final model see the mean.

Measured on debian-deps, the network alone (10 epochs, cosine, test P@1 / P@5): the epoch that
validation picks gives 0.646 / 0.324, the mean of epochs 3 to 7 0.663 / 0.332 and of 3 to 8 0.663 /
0.334. On a set still improving at its last epoch (debian-rdeps) the mean trails the network's own
parameters, which validation then keeps: judging both is what makes it safe to leave on."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional

import numpy as np

from .early_stopping import restore, snapshot
from .settings import RUN

AVERAGING: tuple[str, ...] = RUN["averaging"].choices
_BLOCK = 1 << 18  # values of the mean updated at once (1 MiB of float32: the scratch stays in cache)
NO_AVERAGING = AVERAGING[0]  # "off": each epoch judged by its own parameters


def first_averaged_epoch(epochs: int) -> int:
    """The first epoch of the mean: the one after the run's first quarter (3 of 10)."""
    return epochs // 4 + 1


class EpochAverage:
    """The running mean of a network's parameters at the ends of epochs `first`..now."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.count = 0
        self.best_is_mean = False  # whether the best model validation kept is a mean
        self.on_disk: Optional[dict] = None  # the state of the mean the run folder holds (None: none)
        self._mean: Optional[dict[str, np.ndarray]] = None
        self._own: Optional[dict[str, np.ndarray]] = None  # the training parameters while the mean is judged

    def add(self, net: Any) -> None:
        """Fold the parameters `net` holds now into the mean: mean += (own - mean) / count, a
        block at a time through one small scratch buffer, to the same bits. Whole-array
        temporaries cost two fresh copies of the parameters each time: on a debian-rdeps run (80
        MB of parameters) the 5 updates took 0.60 s so and 0.08 s in blocks (cProfile, one run
        each)."""
        self.count += 1
        if self._mean is None:
            self._mean = snapshot(net)
            return
        state, scale = net.weights(), np.float32(1.0 / self.count)
        for name, mean in self._mean.items():
            _fold(mean, state[name], scale)

    def parameters(self) -> Optional[dict[str, np.ndarray]]:
        return self._mean

    def state(self) -> dict:
        """What a checkpoint's position records (the mean itself goes to average.npz)."""
        return {"first": self.first, "epochs": self.count, "best_is_mean": self.best_is_mean}

    def resume(self, mean: Optional[dict[str, np.ndarray]], state: dict) -> None:
        """A resumed run's average, as a checkpoint saved it."""
        self._mean, self.count, self.best_is_mean = mean, state["epochs"], state["best_is_mean"]

    @contextmanager
    def in_place_of_training(self, net: Any, tables: bool) -> Iterator[None]:
        """The mean in `net` for the block, then `net`'s own parameters back, bit for bit. With
        `tables`, the LSH tables are rebuilt for each (only sparse inference reads them)."""
        own = self._own = snapshot(net, into=self._own)
        try:
            restore(net, self._mean, tables)
            yield
        finally:
            restore(net, own, tables)


def _fold(mean: np.ndarray, own: np.ndarray, scale: np.float32) -> None:
    """In place: mean += (own - mean) * scale, _BLOCK values at a time. `mean` is a snapshot's own
    C-contiguous copy, so its flat view writes through."""
    flat, source = mean.reshape(-1), own.reshape(-1)
    assert np.shares_memory(flat, mean)
    scratch = np.empty(min(_BLOCK, flat.size), mean.dtype)
    for start in range(0, flat.size, _BLOCK):
        block = flat[start:start + _BLOCK]
        change = scratch[:block.size]
        np.subtract(source[start:start + _BLOCK], block, out=change)
        change *= scale
        block += change
