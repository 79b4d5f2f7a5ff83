"""The optimizer of an `ExtremeOutput`'s own weights, in PyTorch's conventions.

The layer's forward pass computes its weight gradient (it has the softmax there) and keeps it in
the engine, backward tells it the factor autograd put on the loss, and `LayerOptimizer.step()` runs
slide's lazy optimizer over the rows the staged batches touched, with ``param_groups[0]["lr"]``,
so `torch.optim.lr_scheduler` schedulers drive it like any optimizer. ``zero_grad()`` drops what
earlier backward passes staged (a forward whose backward is still to come keeps its batch, as
torch's zero_grad between forward and backward loses nothing). Batches staged between two steps (gradient accumulation) are summed."""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional

import torch


def closure_loss(closure: Optional[Callable[[], Any]]) -> Any:
    """What a torch optimizer's step(closure) returns: the closure's loss, computed with gradients on."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


class StagedGradient:
    """The batches whose gradient sits in the engine since the last step: their rows with labels,
    and the factor autograd put on each batch's mean loss (None until its backward ran)."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []  # [rows, factor or None]

    def add(self, rows: int) -> list[Any]:
        batch = [rows, None]
        self.batches.append(batch)
        return batch

    def stale(self) -> bool:
        """Whether the last batch staged was never backpropagated."""
        return bool(self.batches) and self.batches[-1][1] is None

    def clear(self) -> None:
        self.batches.clear()

    def step_arguments(self) -> Optional[tuple[int, float]]:
        """(rows, gradient scale) for the engine's step, which follows scale / rows x the staged
        gradient (the sum of every staged row's). Exact when each batch's factor per row is the same
        (equal batches, or loss / accumulation steps); otherwise the rows-weighted mean, with a warning."""
        done = [(n, f) for n, f in self.batches if f is not None and n > 0]
        if not done:
            return None
        per_row = [f / n for n, f in done]
        if max(per_row) - min(per_row) > 1e-6 * max(abs(v) for v in per_row):
            warnings.warn("ExtremeOutput: the batches staged for this step carry different loss factors per "
                          "row; the layer steps with their mean", RuntimeWarning, stacklevel=4)
        # scale / rows = sum(factor) / sum(rows): each row's factor when they agree, else their mean.
        return sum(n for n, _ in done), math.fsum(f for _, f in done)


class LayerOptimizer(torch.optim.Optimizer):
    """Steps an `ExtremeOutput`'s weights (slide's lazy Adam, Adagrad or SGD over the touched rows).

    Get it as ``layer.optimizer``; call ``step()`` and ``zero_grad()`` beside the encoder's
    optimizer. Its one parameter group holds the layer's weight tensor (which never has a
    ``.grad``: the gradient stays in the engine) and ``lr``, which schedulers may change."""

    def __init__(self, layer: Any, lr: float) -> None:
        super().__init__([layer.weight], {"lr": lr})
        self._layer = layer

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = closure_loss(closure)
        lr = self.param_groups[0]["lr"]
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr >= 0):
            raise ValueError(f"ExtremeOutput's learning rate (param_groups[0]['lr']) must be a finite number "
                             f">= 0, got {lr!r}")
        self._layer._step(float(lr))
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._layer._zero_grad()
