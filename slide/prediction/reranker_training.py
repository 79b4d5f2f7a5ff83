"""Training a network's shortlist re-ranker (`slide.reranker`): each training point is re-ranked
on the network's top labels and its own. Each label's squared hinge over the points whose list
(HINGE_SHORTLIST_FACTOR x ``rerank`` wide) holds it is solved by dual coordinate descent where a
label's every point is at hand at once: in memory in one process, and from a stream
(`slide.datasets.Stream`) of one shard. Over MPI ranks the same problem is solved by CoCoA+
rounds: every rank solves its own points, and the ranks add up their changes. From a stream of
several shards, which never holds a label's every point at once, by Adagrad passes on the logistic
loss, shard by shard as streamed training reads them, so data larger than memory gets a re-ranker
too.

A stream's Adagrad lists are computed on a shard's first visit and kept for the later epochs (4
bytes x ``rerank`` per training point: 100 bytes a point at the default 25, far less than its
features), because the network does not change while the re-ranker trains."""

from __future__ import annotations

import logging
import time
from typing import Any, Iterator, Optional

import numpy as np
import scipy.sparse as sp

from .._inputs import as_features, as_labels
from ..datasets.stream import Stream
from ..progress import progress_bar
from ..reranker import HINGE_SHORTLIST_FACTOR, LabelPoints, ShortlistReranker, hinge_cs, points_per_label

log = logging.getLogger("slide")

# Pieces the training shortlists are scanned in under a progress display: each is one call that
# fingerprints the output layer (0.1 s at 670,091 x 128), so few, but enough to show movement.
PROGRESS_PIECES = 20


def list_scan(net: Any) -> str:
    """How the training lists are ranked: with the output layer's products as the network trained
    with them. Under matmul="bf16" the scan's products are BF16 too where they are native (exact
    elsewhere): debian-deps' 48,106 lists of 100 over 40,415 labels took 4.4 s exact and 2.7 s so
    at 2 threads on an AVX-512 BF16 host, 2.9 s and 1.3 s (on the tile unit) on an AMX host
    (benches/gemm_levels.py), and hold 99.75% of the exact lists' labels. Prediction stays exact."""
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
# CoCoA+ rounds over MPI ranks. `slide train` on debian-deps over 2 ranks of 1 thread (test P@1 /
# P@5; the re-ranker's step, the fusion weights' pick included): each rank's own solution added
# once, without CoCoA+'s scaling, 0.684 / 0.352 in 7.6 s; 2 rounds 0.691 / 0.352 in 11.6 s; 3
# rounds 0.691 / 0.352 in 13.6 s; 5 rounds 0.692 / 0.353 in 17.8 s; the Adagrad epochs the ranks
# ran before, 0.680 / 0.346 in 6.0 s; one process, every point at once, 0.700 / 0.358. A round's
# time is its solve (3.2 s, then 2.1 s on warm duals), not adding up the 128 MiB table (0.2-0.3 s).
HINGE_ROUNDS = 2


def training_lists(net: Any, in_memory: bool, shards: int = 1) -> tuple[str, int]:
    """(how the re-ranker trains, how many of the network's best labels each training point's list
    holds) for points in memory (`in_memory`) or in a stream of `shards` shards: each label's
    squared hinge on lists HINGE_SHORTLIST_FACTOR times as wide as prediction's, except from a
    stream of several shards, Adagrad on prediction's width."""
    width = min(net.rerank, net.output_dim)
    hinge = min(HINGE_SHORTLIST_FACTOR * width, net.output_dim)
    if not in_memory:
        return (HINGE, hinge) if shards == 1 else (ADAGRAD, width)
    if net.comm is not None and net.comm.size > 1:
        return f"{HINGE} in {HINGE_ROUNDS} rounds over the ranks", hinge
    return HINGE, hinge


def _new_reranker(net: Any, listed: int) -> ShortlistReranker:
    return ShortlistReranker(net.input_dim, net.output_dim, min(net.rerank, net.output_dim), trained_on=listed)


def lists_c(net: Any, points: LabelPoints) -> float:
    """The C these training lists call for (`hinge_cs`' first), from their points per label over
    every rank's lists (under MPI each holds a share of a label's points)."""
    counts = points.counts()
    if net.comm is not None:
        net.comm.sum(counts)
    return hinge_cs(points_per_label(counts))[0]


def reranker_from_memory(net: Any, X: sp.csr_matrix, Y: sp.csr_matrix, progress: bool = False,
                         c: Optional[float] = None) -> tuple[ShortlistReranker, list[float]]:
    """Each label's squared hinge (at `c`; None: the C the lists call for, `lists_c`) over its
    points (the rows whose top HINGE_SHORTLIST_FACTOR x `rerank` labels or own labels hold it),
    solved by dual coordinate descent (`ShortlistReranker.fit_hinge`), returning its mean loss.

    Under MPI (X, Y: this rank's share), HINGE_ROUNDS rounds of CoCoA+ (Ma et al. 2015): in each,
    every rank solves its own points' dual variables (kept between rounds) from the same weights,
    seeing its own change as many times over as there are ranks, and all add up the ranks'
    changes, so every rank ends with the same re-ranker. Each round moves the whole table (128 MiB)
    once; one rank solves in one round what one process does."""
    _, listed = training_lists(net, in_memory=True)
    candidates = shortlists(net, X, listed, progress)  # collective under MPI: the whole layer's top labels
    points = LabelPoints.of(candidates, Y, net.output_dim)
    c = lists_c(net, points) if c is None else c
    if net.comm is None:
        reranker, loss = _solved(net, listed, X, Y, candidates, points, c)
        return reranker, [loss]
    reranker = _new_reranker(net, listed)
    ranks = int(net.comm.size)
    duals = points.new_duals()
    pairs = duals.size
    losses = []
    for _ in range(1 if ranks == 1 else HINGE_ROUNDS):
        start = (reranker.slots.copy(), reranker.bias.copy())
        loss = reranker.fit_hinge(X, Y, candidates, c=c, threads=net.threads, seed=net.seed, duals=duals,
                                  adders=ranks, points=points)
        for trained, before in zip((reranker.slots, reranker.bias), start):
            add_every_ranks_changes(net.comm, trained, before)
        losses.append(net.comm.total(loss * pairs) / max(net.comm.total(pairs), 1.0))
    return reranker, losses


def rerankers_over_c(net: Any, X: sp.csr_matrix, Y: sp.csr_matrix, progress: bool = False
                     ) -> Iterator[ShortlistReranker]:
    """The re-rankers `fit_fusion` compares on held-out points: at each C the training lists call
    for (`slide.reranker.hinge_cs`: one or two), each solved as
    `reranker_from_memory` solves it in one process, on lists scanned once, and only when asked
    for: whoever compares them keeps the better, and no more than two are held at once (128 MiB
    each at BITS 24)."""
    if net.comm is not None:
        raise ValueError("the re-ranker's C is compared in one process; under MPI it is solved at one C")
    _, listed = training_lists(net, in_memory=True)
    candidates = shortlists(net, X, listed, progress)
    points = LabelPoints.of(candidates, Y, net.output_dim)
    for c in hinge_cs(points.per_label()):
        yield _solved(net, listed, X, Y, candidates, points, c)[0]


def _solved(net: Any, listed: int, X: sp.csr_matrix, Y: sp.csr_matrix, candidates: np.ndarray,
            points: LabelPoints, c: float) -> tuple[ShortlistReranker, float]:
    """A new re-ranker solved in one process at `c` on these lists, and its mean loss."""
    t0 = time.perf_counter()
    reranker = _new_reranker(net, listed)
    loss = reranker.fit_hinge(X, Y, candidates, c=c, threads=net.threads, seed=net.seed, points=points)
    log.info("re-ranker: each label's squared hinge at C %g on %.0f points a label solved in %.1fs, loss %.4f", c,
             points.per_label(), time.perf_counter() - t0, loss)
    return reranker, loss


def add_every_ranks_changes(comm: Any, trained: np.ndarray, before: np.ndarray) -> None:
    """In place: trained = before + the sum over ranks of each rank's (trained - before), the
    same bits on every rank."""
    trained -= before
    comm.sum(trained)
    trained += before


def reranker_from_stream(net: Any, stream: Stream, epochs: int, c: Optional[float] = None
                         ) -> tuple[ShortlistReranker, list[float]]:
    """A stream of one shard: its training points solved as `reranker_from_memory` solves them
    (the same re-ranker, at `c`; None: the C the lists call for), `epochs` unused. Of several
    shards: `epochs` Adagrad passes, each visiting the shards in the stream's order for that epoch
    and each shard's rows shuffled, skipping the points it holds out for validation, as the
    network's epochs do.

    Why not the hinge shard by shard: a file's points come in its own order (the Debian sets by
    package name), so a label's positives gather in a few shards. Measured by script on
    debian-deps (one network, the suite's test split, no vote, P@1 / P@5 at the best weight), the
    file cut into 4 shards and each solved in turn from the weights the ones before it left: one
    pass 0.680 / 0.347, three passes (each shard's dual variables kept) 0.686 / 0.349 in 6 s,
    against Adagrad's 0.685 / 0.349 in 1.5 s; in 4 blocks of random points one pass gave 0.695 /
    0.354."""
    if (stream.num_features, stream.num_labels) != (net.input_dim, net.output_dim):
        raise ValueError(f"the stream holds {stream.num_features:,} features and {stream.num_labels:,} labels; "
                         f"the network takes {net.input_dim:,} and predicts {net.output_dim:,}")
    solver, listed = training_lists(net, in_memory=False, shards=len(stream.folder))
    if solver == HINGE:  # one shard: every point at hand, as in memory
        points = stream.one_shard_points()
        X = as_features(points.X, net.input_dim)
        return reranker_from_memory(net, X, as_labels(points.Y, net.output_dim, X.shape[0]), c=c)
    reranker = ShortlistReranker(net.input_dim, net.output_dim, listed)
    kept: dict[int, np.ndarray] = {}
    losses = []
    for epoch in range(epochs):
        order = stream.shard_order(epoch)
        total, scored = 0.0, 0
        for segment in stream.segments(epoch):
            shard, split = int(order[segment.index]), segment.data
            X = as_features(split.X, net.input_dim)
            if shard not in kept:
                kept[shard] = shortlists(net, X, listed)
            if len(segment.order):
                Y = as_labels(split.Y, net.output_dim, X.shape[0])
                loss = reranker.train_pass(X, Y, kept[shard], segment.order, threads=net.threads)
                pairs = scored_pairs(kept[shard], Y, segment.order)
                total += loss * pairs
                scored += pairs
        losses.append(total / max(scored, 1))
    return reranker, losses
