"""Training a network's shortlist re-ranker (`slide.reranker`): each training point is re-ranked
on the network's top ``rerank`` labels and its own. From points in memory (each label's squared
hinge solved over all of its points, on lists HINGE_SHORTLIST_FACTOR times as wide), or, by
Adagrad passes, from a shard folder (`slide.datasets.Stream`) read shard by shard as streamed
training reads it, so data larger than memory gets a re-ranker too, and over MPI ranks.

A stream's shortlists are computed on a shard's first visit and kept for the later epochs (4 bytes
x ``rerank`` per training point: 100 bytes a point at the default 25, far less than its features),
because the network does not change while the re-ranker trains."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._inputs import as_features, as_labels
from ..datasets.stream import Stream
from ..progress import progress_bar
from ..reranker import HINGE_SHORTLIST_FACTOR, ShortlistReranker

# Pieces the training shortlists are scanned in under a progress display: each is one call that
# fingerprints the output layer (0.1 s at 670,091 x 128), so few, but enough to show movement.
PROGRESS_PIECES = 20


def list_scan(net: Any) -> str:
    """How the training lists are ranked: with the output layer's products as the network trained
    with them. Under matmul="bf16" the scan's products are BF16 too where they are native (exact
    elsewhere): debian-deps' 48,106 lists of 100 over 40,415 labels took 4.4 s exact and 2.7 s so
    at 2 threads, and hold 99.75% of the exact lists' labels. Prediction stays exact."""
    return "bf16" if net.matmul == "bf16" else "auto"


def shortlists(net: Any, X: sp.csr_matrix, width: int, progress: bool = False) -> np.ndarray:
    """int32 [rows, width]: each row's `width` best labels by the network alone (list_scan). With
    `progress` in one process, in PROGRESS_PIECES pieces under a progress display: at
    Amazon-670K's shape the exact scan takes 1 ms a point, minutes for a training set
    (benches/reranker_scale.py). Under MPI the scan is collective and ranks hold different row
    counts, so it stays one call."""
    scan = list_scan(net)
    if not progress or net.comm is not None or X.shape[0] < 2 * PROGRESS_PIECES:
        return net.ranks.top_k(net, X, width, True, scan=scan)[0]
    bar = progress_bar(X.shape[0], f"the re-ranker's shortlists (the network's top {width})", True)
    out = np.empty((X.shape[0], width), np.int32)
    for rows in np.array_split(np.arange(X.shape[0]), PROGRESS_PIECES):
        out[rows[0]:rows[-1] + 1] = net.ranks.top_k(net, X[rows[0]:rows[-1] + 1], width, True, scan=scan)[0]
        bar.update(len(rows))
    bar.close()
    return out


def scored_pairs(candidates: np.ndarray, Y: sp.csr_matrix, rows: np.ndarray) -> int:
    """The (row, label) pairs a pass over `rows` scores: each row's shortlist and its own labels
    outside it (what the engine's mean loss is over)."""
    listed = int((candidates[rows] >= 0).sum())
    Yr = Y[rows]
    owner = np.repeat(np.arange(len(rows)), np.diff(Yr.indptr))
    outside = ~(candidates[rows][owner] == Yr.indices[:, None]).any(axis=1)
    return listed + int(outside.sum())


HINGE, ADAGRAD = "each label's squared hinge solved", "Adagrad epochs"


def training_lists(net: Any, in_memory: bool) -> tuple[str, int]:
    """(how the re-ranker trains, how many of the network's best labels each training point's list
    holds): with every point in memory in one process, the squared hinge on lists
    HINGE_SHORTLIST_FACTOR times as wide as prediction's; from a stream or over MPI ranks, Adagrad
    on prediction's width."""
    width = min(net.rerank, net.output_dim)
    if in_memory and net.comm is None:
        return HINGE, min(HINGE_SHORTLIST_FACTOR * width, net.output_dim)
    return ADAGRAD, width


def reranker_from_memory(net: Any, X: sp.csr_matrix, Y: sp.csr_matrix, epochs: int, progress: bool = False
                         ) -> tuple[ShortlistReranker, list[float]]:
    """In one process: each label's squared hinge over its points (the rows whose top
    HINGE_SHORTLIST_FACTOR x `rerank` labels or own labels hold it), solved by dual coordinate
    descent (`ShortlistReranker.fit_hinge`; `epochs` unused), returning its loss. Under MPI, from
    each rank's own points (X, Y: this rank's share): `epochs` Adagrad passes whose changes all
    ranks add up, since no rank holds a label's every point."""
    solver, listed = training_lists(net, in_memory=True)
    reranker = ShortlistReranker(net.input_dim, net.output_dim, min(net.rerank, net.output_dim), trained_on=listed)
    candidates = shortlists(net, X, listed, progress)  # collective under MPI: the whole layer's top labels
    if solver == HINGE:
        return reranker, [reranker.fit_hinge(X, Y, candidates, threads=net.threads, seed=net.seed)]
    return reranker, _fit_over_ranks(net, reranker, X, Y, candidates, epochs)


def _fit_over_ranks(net: Any, reranker: ShortlistReranker, X: sp.csr_matrix, Y: sp.csr_matrix,
                    candidates: np.ndarray, epochs: int) -> list[float]:
    """Each epoch every rank passes over its own points (in the order `ShortlistReranker.fit`
    takes them) from the same start, then all add up the ranks' changes to the weights and to
    Adagrad's sums, so that all end with the same re-ranker, trained on every point. One rank
    trains exactly what one process does. Returns each epoch's mean loss over every rank's
    shortlisted labels.

    Adding the changes, not averaging the weights, keeps whole what a label learned from one
    rank's points (the mean would halve it on 2 ranks; in `slide train` runs on debian-deps the
    mean gave 0.667 P@1 and 0.334 P@5, the sum 0.667 and 0.338). Measured on debian-deps over 2 ranks
    (one network; the weight picked on 2,500 test points, P@1 on the other 9,795): the network
    alone 0.667, this 0.686, the same re-ranker trained in one process 0.690; adding the changes
    8 or 16 times an epoch instead of once gave 0.688 for 9 or 19 s more (each sync moves the
    whole 128 MiB table)."""
    rng = np.random.default_rng(net.seed)
    Y = sp.csr_matrix(Y)
    Y.sum_duplicates()
    losses = []
    for _ in range(epochs):
        start = (reranker.slots.copy(), reranker.bias.copy()) if net.comm.size > 1 else ()
        rows = rng.permutation(X.shape[0])
        loss = reranker.train_pass(X, Y, candidates, rows, threads=net.threads)
        pairs = scored_pairs(candidates, Y, rows)
        for trained, before in zip((reranker.slots, reranker.bias), start):
            add_every_ranks_changes(net.comm, trained, before)
        losses.append(net.comm.total(loss * pairs) / max(net.comm.total(pairs), 1.0))
    return losses


def add_every_ranks_changes(comm: Any, trained: np.ndarray, before: np.ndarray) -> None:
    """In place: trained = before + the sum over ranks of each rank's (trained - before), the
    same bits on every rank."""
    trained -= before
    comm.sum(trained)
    trained += before


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
