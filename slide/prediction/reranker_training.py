"""Training a network's shortlist re-ranker (`slide.reranker`): each training point is re-ranked
on the network's top ``rerank`` labels and its own. From points in memory, or from a shard folder
(`slide.datasets.Stream`) read shard by shard, as streamed training reads it, so data larger than
memory gets a re-ranker too.

A stream's shortlists are computed on a shard's first visit and kept for the later epochs (4 bytes
x ``rerank`` per training point: 100 bytes a point at the default 25, far less than its features),
because the network does not change while the re-ranker trains."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._inputs import as_features, as_labels
from ..datasets.stream import Stream
from ..reranker import ShortlistReranker


def shortlists(net: Any, X: sp.csr_matrix, width: int) -> np.ndarray:
    """int32 [rows, width]: each row's `width` best labels by the network alone."""
    return net.ranks.top_k(net, X, width, True)[0]


def scored_pairs(candidates: np.ndarray, Y: sp.csr_matrix, rows: np.ndarray) -> int:
    """The (row, label) pairs a pass over `rows` scores: each row's shortlist and its own labels
    outside it (what the engine's mean loss is over)."""
    listed = int((candidates[rows] >= 0).sum())
    Yr = Y[rows]
    owner = np.repeat(np.arange(len(rows)), np.diff(Yr.indptr))
    outside = ~(candidates[rows][owner] == Yr.indices[:, None]).any(axis=1)
    return listed + int(outside.sum())


def reranker_from_memory(net: Any, X: sp.csr_matrix, Y: sp.csr_matrix, epochs: int
                         ) -> tuple[ShortlistReranker, list[float]]:
    width = min(net.rerank, net.output_dim)
    reranker = ShortlistReranker(net.input_dim, net.output_dim, width)
    losses = reranker.fit(X, Y, shortlists(net, X, width), epochs=epochs, threads=net.threads, seed=net.seed)
    return reranker, losses


def reranker_from_stream(net: Any, stream: Stream, epochs: int) -> tuple[ShortlistReranker, list[float]]:
    """Each epoch visits the stream's shards in its order for that epoch and each shard's rows
    shuffled, skipping the points it holds out for validation, as the network's epochs do."""
    if (stream.num_features, stream.num_labels) != (net.input_dim, net.output_dim):
        raise ValueError(f"the stream holds {stream.num_features:,} features and {stream.num_labels:,} labels; "
                         f"the network takes {net.input_dim:,} and predicts {net.output_dim:,}")
    width = min(net.rerank, net.output_dim)
    reranker = ShortlistReranker(net.input_dim, net.output_dim, width)
    kept: dict[int, np.ndarray] = {}
    losses = []
    for epoch in range(epochs):
        order = stream.shard_order(epoch)
        total, scored = 0.0, 0
        for segment in stream.segments(epoch):
            shard, split = int(order[segment.index]), segment.data
            X = as_features(split.X, net.input_dim)
            if shard not in kept:
                kept[shard] = shortlists(net, X, width)
            if len(segment.order):
                Y = as_labels(split.Y, net.output_dim, X.shape[0])
                loss = reranker.train_pass(X, Y, kept[shard], segment.order, threads=net.threads)
                pairs = scored_pairs(kept[shard], Y, segment.order)
                total += loss * pairs
                scored += pairs
        losses.append(total / max(scored, 1))
    return reranker, losses
