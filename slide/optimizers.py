"""The optimizers a network can train with. Their names are the settings table's choices; what
state each keeps beside the weights (and how model files name it) comes from the engine
(cpp/optim/optimizer.h), so neither is written twice."""

from __future__ import annotations

from ._core import OptimizerKind, optimizer_state_names
from .settings import NETWORK

OPTIMIZERS: tuple[str, ...] = NETWORK["optimizer"].choices


def state_names(optimizer: str) -> list[str]:
    """The arrays `optimizer` keeps beside each weight array, e.g. ["adam_m", "adam_v"]."""
    return list(optimizer_state_names(getattr(OptimizerKind, optimizer)))


_ALL_STATE = frozenset(n for o in OPTIMIZERS for n in state_names(o))


def is_optimizer_state(array: str) -> bool:
    """Whether a network array (`net.weights()` key) is optimizer state rather than the model."""
    last = array.rsplit(".", 1)[-1]
    return last in _ALL_STATE or last.removeprefix("bias_") in _ALL_STATE
