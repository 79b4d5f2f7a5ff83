"""A run's training data in memory, as the training loop reads it."""

from __future__ import annotations

from typing import Any

from ..datasets.synthetic import Split
from ..training.sources import TrainingSource, in_memory_source as _in_memory


def in_memory_source(net: Any, train: Split, seed: int, shuffle: bool = True) -> TrainingSource:
    """`train` prepared for `net` once: one segment per epoch, shuffled by (`seed`, epoch)."""
    return _in_memory(net.prepare(train.X, train.Y), seed, shuffle)
