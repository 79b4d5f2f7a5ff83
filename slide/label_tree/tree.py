"""A label tree beside the network (Parabel's, as omikuji trains it): a binary tree over the
labels (`clustering`), a linear classifier per node and per label over the input features
(`node_points` says on which points; cpp/rerank/sparse_dual_cd.h solves them), and beam search
down it. A label's log-probability is the sum over its path of each classifier's
-max(0, 1 - score)^2, omikuji's reading of the squared hinge.

It is a different ranker from the network, and the two are better together than either alone:
on debian-rdeps (57,489 labels) slide's fused scores gave 0.217 / 0.104 P@1 / P@5, one omikuji
tree 0.218 / 0.104, and the two added on the union of their top 25 0.226 / 0.109, where two
networks averaged gave 0.224 / 0.105 in twice the time (by script, docs/benchmarks)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from .._core import sparse_dual_cd, sparse_pair_scores
from ..datasets.synthetic import unit_rows
from .clustering import LEAF_SIZE, build_shape, label_vectors
from .shape import TreeShape
from .node_points import task_points

# Omikuji's defaults for its classifiers (liblinear's squared hinge: C 1, tolerance 0.1, at most
# 20 passes, weights below 0.1 dropped) and its beam.
C, TOLERANCE, MAX_ITERATIONS, THRESHOLD = 1.0, 0.1, 20, 0.1
BEAM = 10


def log_probability(scores: np.ndarray) -> np.ndarray:
    """A classifier's score as a log-probability: -max(0, 1 - score)^2."""
    return -np.square(np.maximum(0.0, 1.0 - scores.astype(np.float32)))


class LabelTree:
    """A fitted label tree over `n_features` inputs and `n_labels` labels: its `shape` and its
    classifiers' sparse weights (`indptr`, `indices`, `values`, `bias`; tasks numbered nodes
    first, then labels)."""

    def __init__(self, shape: TreeShape, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                 bias: np.ndarray, n_features: int, n_labels: int) -> None:
        self.shape, self.n_features, self.n_labels = shape, int(n_features), int(n_labels)
        self.indptr, self.indices, self.values, self.bias = indptr, indices, values, bias
        self._leaf_of = shape.leaf_of_label(self.n_labels)
        self._paths = _paths(shape)

    @classmethod
    def fit(cls, X: sp.csr_matrix, Y: sp.csr_matrix, *, leaf_size: int = LEAF_SIZE, threads: int = 1,
            seed: int = 0, vectors: Optional[sp.csr_matrix] = None) -> "LabelTree":
        """The tree over Y's labels and its classifiers, from training points X, Y (in memory);
        `vectors`: the labels' `label_vectors(X, Y)` when already computed (a forest's trees share them)."""
        X, Y = unit_rows(X), sp.csr_matrix(Y)
        shape = build_shape(label_vectors(X, Y) if vectors is None else vectors, leaf_size, seed, threads)
        indptr, rows, positive = task_points(shape, Y)
        w_indptr, w_indices, w_values, bias, _ = sparse_dual_cd(
            X.indptr, X.indices, X.data, X.shape[1], indptr, rows, positive, C, MAX_ITERATIONS, TOLERANCE,
            int(seed), THRESHOLD, max(1, int(threads)))
        return cls(shape, w_indptr, w_indices, w_values, bias, X.shape[1], Y.shape[1])

    def _scores(self, X: sp.csr_matrix, rows: np.ndarray, tasks: np.ndarray, threads: int) -> np.ndarray:
        return sparse_pair_scores(X.indptr, X.indices, X.data, self.n_features, rows.astype(np.int64),
                                  tasks.astype(np.int32), self.indptr, self.indices, self.values, self.bias,
                                  max(1, int(threads)))

    def top(self, X: sp.csr_matrix, k: int, *, beam: int = BEAM, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(ids int32 [n, k], log-probabilities float32 [n, k]), best first, by beam search:
        at each level every row keeps its `beam` best nodes, and every label of every leaf
        reached is scored. -1 / -inf where a row reached fewer than k labels."""
        X = unit_rows(X)
        n, nodes = X.shape[0], self.shape.nodes
        rows, at, log_p = np.arange(n), np.zeros(n, np.int64), np.zeros(n, np.float32)
        found_rows, found_labels, found_log_p = [], [], []
        while rows.size:
            inner = self.shape.children[at, 0] >= 0
            leaf_rows, leaves, leaf_log_p = rows[~inner], at[~inner], log_p[~inner]
            sizes = self.shape.leaf_indptr[leaves + 1] - self.shape.leaf_indptr[leaves]
            starts = np.repeat(self.shape.leaf_indptr[leaves] - np.cumsum(sizes) + sizes, sizes)
            labels = self.shape.leaf_labels[starts + np.arange(int(sizes.sum()))]
            found_rows.append(np.repeat(leaf_rows, sizes))
            found_labels.append(labels)
            found_log_p.append(np.repeat(leaf_log_p, sizes))
            rows, parents, log_p = np.repeat(rows[inner], 2), at[inner], np.repeat(log_p[inner], 2)
            at = self.shape.children[parents].ravel()
            log_p = log_p + log_probability(self._scores(X, rows, at, threads))
            rows, at, log_p = best_per_row(rows, at, log_p, beam)
        rows, labels, log_p = (np.concatenate(found_rows), np.concatenate(found_labels),
                               np.concatenate(found_log_p))
        log_p = log_p + log_probability(self._scores(X, rows, labels + nodes, threads))
        return best_table(n, k, rows, labels, log_p)

    def log_probabilities(self, X: sp.csr_matrix, rows: np.ndarray, labels: np.ndarray, *, threads: int = 1
                          ) -> np.ndarray:
        """float32: each (row of X, label) pair's log-probability down its whole path, exactly
        (no beam): each path scored once per row, however many of the row's labels share its leaf."""
        X = unit_rows(X)
        rows, labels = np.asarray(rows, np.int64), np.asarray(labels, np.int64)
        nodes = self.shape.nodes
        row_leaves, back = np.unique(rows * nodes + self._leaf_of[labels], return_inverse=True)
        path = self._paths[row_leaves % nodes]  # [row and leaf, depth], -1 past the path's end
        on_path = path >= 0
        path_rows = np.broadcast_to((row_leaves // nodes)[:, None], path.shape)[on_path]
        along = np.zeros(path.shape, np.float32)
        along[on_path] = log_probability(self._scores(X, path_rows, path[on_path], threads))
        own = log_probability(self._scores(X, rows, labels + nodes, threads))
        return along.sum(axis=1)[back.ravel()] + own

    def label_scores(self, X: sp.csr_matrix, rows: np.ndarray, labels: np.ndarray, *, threads: int = 1) -> np.ndarray:
        """float32: each (row of X, label) pair's score by the label's own classifier alone."""
        return self._scores(unit_rows(X), np.asarray(rows, np.int64), np.asarray(labels, np.int64) + self.shape.nodes,
                            threads)

    @staticmethod
    def array_names() -> tuple[str, ...]:
        """The names `to_arrays` gives its arrays."""
        return ("tree.children", "tree.leaf_indptr", "tree.leaf_labels", "tree.weights.indptr", "tree.weights.indices",
                "tree.weights.values", "tree.bias")

    def to_arrays(self) -> dict[str, np.ndarray]:
        return dict(zip(self.array_names(), (self.shape.children.ravel(), self.shape.leaf_indptr,
                                             self.shape.leaf_labels, self.indptr, self.indices, self.values, self.bias)))

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], n_features: int, n_labels: int) -> "LabelTree":
        """Rebuild from `to_arrays`'s output, which comes from a file: the shape must be one tree
        over the labels (`TreeShape.checked`) and the weights one sparse row per node and label
        over the input features, finite; else ValueError."""
        children = a["tree.children"]
        if children.ndim != 1 or children.size % 2:
            raise ValueError(f"the tree's children must hold two ids a node, got {children.size} values")
        shape = TreeShape.checked(children.reshape(-1, 2), a["tree.leaf_indptr"], a["tree.leaf_labels"], n_labels)
        indptr, indices, values, bias = (a["tree.weights.indptr"], a["tree.weights.indices"], a["tree.weights.values"],
                                         a["tree.bias"])
        tasks = shape.nodes + n_labels
        if bias.shape != (tasks,) or indptr.shape != (tasks + 1,):
            raise ValueError(f"the tree's weights must hold one row and bias per node and label ({tasks})")
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.size or indices.shape != values.shape:
            raise ValueError(f"the tree's weight rows must run from 0 to {indices.size} without decreasing")
        if indices.size and not 0 <= int(indices.min()) <= int(indices.max()) < n_features:
            raise ValueError(f"the tree's weights name features outside [0, {n_features})")
        within_row = np.ones(indices.size, bool)
        within_row[indptr[:-1][indptr[:-1] < indices.size]] = False  # each row's first id follows no other
        out_of_order = np.flatnonzero(within_row[1:] & (np.diff(indices.astype(np.int64)) <= 0))
        if out_of_order.size:
            row = int(np.searchsorted(indptr, out_of_order[0] + 1, side="right")) - 1
            raise ValueError(f"the tree's weight row {row} names its features out of ascending order")
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(bias))):
            raise ValueError("the tree's weights hold a NaN or inf")
        return cls(shape, indptr, indices, values, bias, n_features, n_labels)


def _paths(shape: TreeShape) -> np.ndarray:
    """int64 [nodes, depth]: each node's path from below the root down to it (-1 padded)."""
    parent = shape.parents()
    depth = np.zeros(shape.nodes, np.int64)
    for node in range(1, shape.nodes):  # parents come first
        depth[node] = depth[parent[node]] + 1
    paths = np.full((shape.nodes, max(1, int(depth.max()))), -1, np.int64)
    for node in range(1, shape.nodes):
        paths[node, :depth[node] - 1] = paths[parent[node], :depth[node] - 1]
        paths[node, depth[node] - 1] = node
    return paths


def best_table(n: int, k: int, rows: np.ndarray, items: np.ndarray, scores: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(items int32 [n, k], scores float32 [n, k]): each of n rows' k best (item, score) pairs
    of those given, best first; -1 / -inf where a row has fewer than k."""
    rows, items, scores = best_per_row(rows, items, scores, k)
    ids, out = np.full((n, k), -1, np.int32), np.full((n, k), -np.inf, np.float32)
    rank = np.arange(rows.size) - np.searchsorted(rows, rows)
    ids[rows, rank], out[rows, rank] = items, scores
    return ids, out


def best_per_row(rows: np.ndarray, items: np.ndarray, scores: np.ndarray, keep: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The `keep` best (item, score) of each row, rows ascending and best first within a row
    (equal scores in the order given)."""
    candidates = _at_least_kth(rows, scores, keep)
    if candidates is not None:
        rows, items, scores = rows[candidates], items[candidates], scores[candidates]
    order = np.lexsort((-scores, rows))
    rows, items, scores = rows[order], items[order], scores[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, rows)
    kept = rank < keep
    return rows[kept], items[kept], scores[kept]


def _at_least_kth(rows: np.ndarray, scores: np.ndarray, keep: int) -> Optional[np.ndarray]:
    """Where each row's score is at least its `keep`-th best (every pair of a row with fewer):
    all that `best_per_row` needs to sort, found by a partition of a rows x pairs table in linear
    time. The beam's leaves give each test point up to 1,000 labels for 10 kept, and sorting
    them all was most of a prediction's beam search (debian-rdeps' 6,535 test points: 1.7 s of
    lexsort in 3.6 s). None where there is nothing to gain or the table would be sparse."""
    if rows.size <= 4 * keep or keep < 1:
        return None
    counts = np.bincount(rows)
    widest = int(counts.max())
    if widest <= keep or counts.size * widest > 4 * rows.size:
        return None
    order = np.argsort(rows, kind="stable")
    starts = np.cumsum(counts) - counts
    table = np.full((counts.size, widest), -np.inf, scores.dtype)
    table[rows[order], np.arange(rows.size) - starts[rows[order]]] = scores[order]
    kth = -np.partition(-table, keep - 1, axis=1)[:, keep - 1]
    return np.flatnonzero(~(scores < kth[rows]))  # NaN scores stay, for the sort to place as it did
