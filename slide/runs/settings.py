"""How a `slide train` run trains, evaluates, checkpoints and reacts to divergence (settings.RUN)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..epoch_average import NO_AVERAGING
from ..settings import RUN


@dataclass
class RunSettings:
    epochs: int
    batch_size: int
    eval_every: int            # samples between periodic evaluations
    eval_samples: int          # test points in a periodic evaluation
    checkpoint_every: float    # seconds between checkpoints
    # the end of a run writes one only after this long since the last (or checkpoint_every if less)
    end_checkpoint_after: float = RUN["end_checkpoint_after"].default
    final_eval_samples: Optional[int] = None  # None: the whole test set
    # Test evaluations during training (periodic and at epoch ends) run only while their time is at
    # most this share of the training time so far; None: always. The final one always runs.
    eval_budget: Optional[float] = None
    final_model_optimizer: bool = False  # model.npz also holds the optimizer state
    on_divergence: str = "stop"  # or "backoff": reload the last good checkpoint, lower the learning rate
    backoff_factor: float = 0.5
    max_backoffs: int = 3
    progress: bool = True
    early_stopping: Optional[int] = None  # epochs without a better validation monitor before stopping
    monitor: str = "P@1"
    averaging: str = NO_AVERAGING  # "swa": validation also judges the mean of the epochs since the first quarter
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """ValueError naming the first setting out of its range (settings.RUN)."""
        for name in ("epochs", "batch_size", "eval_every", "eval_samples", "checkpoint_every", "end_checkpoint_after",
                     "on_divergence", "monitor", "averaging"):
            RUN[name].check(getattr(self, name))
        for name in ("final_eval_samples", "early_stopping", "eval_budget"):
            if getattr(self, name) is not None:
                RUN[name].check(getattr(self, name))


