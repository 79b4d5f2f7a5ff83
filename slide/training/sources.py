"""What the training loop reads: per epoch, segments of (data, row order). Data in memory is one
segment, reshuffled each epoch; a shard folder (`slide.datasets.Stream`) or an iterable of (X, Y)
pieces is many. `segments(epoch, start)` yields from the `start`-th segment on, so a run resumes
inside an epoch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import numpy as np
import scipy.sparse as sp

from ..datasets.stream import Stream
from ..model.data import TrainingData


@dataclass
class TrainingSource:
    """Training data as segments per epoch (see the module's docstring). `samples_per_epoch` is
    None for an iterable of pieces, whose length is not known in advance."""

    segments: Callable[[int, int], Iterator[tuple[TrainingData, np.ndarray]]]
    samples_per_epoch: Optional[int]


def in_memory_source(data: TrainingData, seed: Any, shuffle: bool = True) -> TrainingSource:
    """One segment: `data`'s rows in a seeded shuffle per epoch (`seed`: anything NumPy seeds with)."""

    def segments(epoch: int, start: int = 0):
        if start == 0:
            yield data, (np.random.default_rng([*np.atleast_1d(seed), epoch]).permutation(len(data)) if shuffle
                         else np.arange(len(data)))

    return TrainingSource(segments, len(data))


def streamed_source(net: Any, stream: Stream, batch_size: int) -> TrainingSource:
    """A shard folder read shard by shard; each shard is prepared on the reading thread."""
    prepare = lambda split: net.prepare(split.X, split.Y)  # noqa: E731

    def segments(epoch: int, start: int = 0):
        for segment in stream.segments(epoch, batch_size=batch_size, start=start, prepare=prepare):
            yield segment.data, segment.order

    return TrainingSource(segments, stream.samples_per_epoch)


def pieces_source(net: Any, source: Any, epochs: int, batch_size: int) -> TrainingSource:
    """What `fit` trains on when Y is omitted: a Stream, or an iterable of (X, Y) pieces trained in
    the order given (a one-pass iterator allows one epoch)."""
    if isinstance(source, Stream):
        return streamed_source(net, source, batch_size)
    if sp.issparse(source) or isinstance(source, np.ndarray):
        raise ValueError("fit(X) without Y: X must be a slide.datasets.Stream or an iterable of (X, Y) "
                         "pieces; for a matrix, pass its labels as Y")
    try:
        is_iterator = iter(source) is source
    except TypeError:
        raise ValueError(f"fit(X) without Y needs a slide.datasets.Stream or an iterable of (X, Y) pieces, "
                         f"got {type(source).__name__}") from None
    if is_iterator and epochs > 1:
        raise ValueError("an iterator of pieces can be read once, so it trains one epoch; pass epochs=1, a "
                         "list, or a slide.datasets.Stream")

    def segments(epoch: int, start: int = 0):
        for i, piece in enumerate(source):
            if i < start:
                continue
            if not isinstance(piece, (tuple, list)) or len(piece) != 2:
                raise ValueError(f"piece {i} of the training data is not an (X, Y) pair")
            data = net.prepare(*piece)
            yield data, np.arange(len(data))

    return TrainingSource(segments, None)
