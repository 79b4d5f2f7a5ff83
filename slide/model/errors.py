"""How training stops short: the user's Ctrl-C (the model intact) or divergence (the model lost)."""

from __future__ import annotations


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during `Network.train_rows`: `rows_done` rows were trained, the model is intact."""

    def __init__(self, rows_done: int, totals: dict) -> None:
        super().__init__(rows_done)
        self.rows_done, self.totals = rows_done, totals


class TrainingDiverged(FloatingPointError):
    """A batch produced a NaN/inf loss or NaN/inf parameters; the network is no longer usable.

    Raised after the batch in which it first happens. `rows_done` rows of the call were trained
    before the bad batch.
    """

    def __init__(self, message: str, rows_done: int = 0) -> None:
        super().__init__(message)
        self.rows_done = rows_done
