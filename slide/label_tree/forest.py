"""Label trees averaged (``label_trees``; omikuji's n_trees): each tree is split from its own seed
over the same label vectors, so each groups the labels a little differently and its beam reaches
other labels. Their beams' candidates join, and a label's log-probability and its per-label
classifiers' score are the trees' means.

Where the labels have so few points that the trees' own classifiers re-score the candidates in the
re-ranker's place (slide.prediction.methods.TREE_RESCORES_BELOW), the shape's preset averages
FEW_POINTS_TREES trees: each label's score is then the mean of two classifiers trained on different
leaves' points. Slide with no flags -> ``--label-trees 2``, test P@1 / P@5, by script (seeds 0-2):
debian-rdeps (57,489 labels, 3.8 points a label) 0.2262 / 0.1085 in 10.1 s -> 0.2267 / 0.1096 in
12.0 s after 20da44a (omikuji's three trees 0.2275 / 0.1090 in 8.4 s that day), and 0.2265 / 0.1083
-> 0.2256 / 0.1093 in 12.0-12.4 -> 15.8-16.1 s before the cheaper shape and beam; debian-deps cut
to its first 8,000 training points (4.3 a label) 0.4417 / 0.2184 -> 0.4460 / 0.2201 in 3.4 -> 3.9 s,
debian-deps-by-source cut so 0.4541 / 0.2167 -> 0.4538 / 0.2177. Where a re-ranker re-scores, a
second tree only adds its log-probability and candidates, and the time is the re-ranker's."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..datasets.synthetic import unit_rows
from .clustering import LEAF_SIZE, label_vectors
from .tree import BEAM, LabelTree, best_table

FEW_POINTS_TREES = 2  # trees averaged where their classifiers re-score in the re-ranker's place
# Tree i > 0 is split from seed + i x this (mod 2^64): far apart, whatever seeds a user picks.
_SEED_STEP = 0x9E3779B97F4A7C15


def _prefix(i: int) -> str:
    """The names of tree i's arrays in a model file start with this: the first tree's are those a
    file with one tree has always had ("tree."), the others' "tree1.", "tree2.", ..."""
    return "tree." if i == 0 else f"tree{i}."


class LabelForest:
    """Label trees over the same `n_features` inputs and `n_labels` labels, averaged."""

    def __init__(self, trees: Sequence[LabelTree]) -> None:
        if not trees:
            raise ValueError("a label forest needs at least one tree")
        first = trees[0]
        for tree in trees[1:]:
            if (tree.n_features, tree.n_labels) != (first.n_features, first.n_labels):
                raise ValueError(f"the label trees must share their features and labels: {first.n_features} x "
                                 f"{first.n_labels} against {tree.n_features} x {tree.n_labels}")
        self.trees = list(trees)
        self.n_features, self.n_labels = first.n_features, first.n_labels

    @classmethod
    def fit(cls, X: sp.csr_matrix, Y: sp.csr_matrix, *, trees: int = 1, leaf_size: int = LEAF_SIZE,
            threads: int = 1, seed: int = 0) -> "LabelForest":
        """`trees` label trees over Y's labels from training points X, Y (in memory), the first
        from `seed` (the tree `LabelTree.fit` gives), the labels' vectors computed once."""
        if isinstance(trees, bool) or not isinstance(trees, (int, np.integer)) or trees < 1:
            raise ValueError(f"trees must be an integer of at least 1, got {trees!r}")
        Y = sp.csr_matrix(Y)
        vectors = label_vectors(unit_rows(X), Y)
        return cls([LabelTree.fit(X, Y, leaf_size=leaf_size, threads=threads, seed=(seed + i * _SEED_STEP) % 2**64,
                                  vectors=vectors) for i in range(int(trees))])

    @property
    def nodes(self) -> int:
        return sum(tree.shape.nodes for tree in self.trees)

    @property
    def weights(self) -> int:
        """The classifiers' weights kept, over every tree."""
        return sum(tree.values.size for tree in self.trees)

    def candidates(self, X: sp.csr_matrix, k: int, *, beam: int = BEAM, threads: int = 1) -> np.ndarray:
        """int32 [n, k x trees]: each tree's beam's best k (`LabelTree.top`) side by side; a label
        two trees found is listed twice, -1 where a tree reached fewer than k."""
        return np.concatenate([tree.top(X, k, beam=beam, threads=threads)[0] for tree in self.trees], axis=1)

    def top(self, X: sp.csr_matrix, k: int, *, beam: int = BEAM, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(ids int32 [n, k], log-probabilities float32 [n, k]), best first: the best k by the
        trees' mean log-probability (`log_probabilities`) among the labels their beams reached.
        -1 / -inf where they reached fewer than k."""
        if len(self.trees) == 1:
            return self.trees[0].top(X, k, beam=beam, threads=threads)
        found = self.candidates(X, k, beam=beam, threads=threads)
        n = found.shape[0]
        rows = np.repeat(np.arange(n, dtype=np.int64), found.shape[1])
        labels = found.ravel().astype(np.int64)
        listed = labels >= 0
        pairs = np.unique(rows[listed] * self.n_labels + labels[listed])
        rows, labels = pairs // self.n_labels, pairs % self.n_labels
        return best_table(n, k, rows, labels, self.log_probabilities(X, rows, labels, threads=threads))

    def log_probabilities(self, X: sp.csr_matrix, rows: np.ndarray, labels: np.ndarray, *, threads: int = 1
                          ) -> np.ndarray:
        """float32: each (row of X, label) pair's log-probability down its whole path in each
        tree (`LabelTree.log_probabilities`), the trees' mean."""
        return self._mean(LabelTree.log_probabilities, X, rows, labels, threads)

    def label_scores(self, X: sp.csr_matrix, rows: np.ndarray, labels: np.ndarray, *, threads: int = 1) -> np.ndarray:
        """float32: each (row of X, label) pair's score by the label's own classifier in each tree,
        the trees' mean."""
        return self._mean(LabelTree.label_scores, X, rows, labels, threads)

    def _mean(self, per_tree, X: sp.csr_matrix, rows: np.ndarray, labels: np.ndarray, threads: int) -> np.ndarray:
        total = per_tree(self.trees[0], X, rows, labels, threads=threads)
        for tree in self.trees[1:]:
            total = total + per_tree(tree, X, rows, labels, threads=threads)
        return (total / np.float32(len(self.trees))).astype(np.float32)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every tree's `LabelTree.to_arrays`, tree i's names starting with `_prefix(i)`."""
        arrays = {}
        for i, tree in enumerate(self.trees):
            arrays.update({_prefix(i) + name[len("tree."):]: a for name, a in tree.to_arrays().items()})
        return arrays

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], n_features: int, n_labels: int) -> "LabelForest":
        """Rebuild from `to_arrays`'s output, which comes from a file: trees 0, 1, ... each whole
        (`LabelTree.from_arrays` checks each), none missing between; else ValueError naming the tree."""
        names = sorted(name[len("tree."):] for name in LabelTree.array_names())
        trees, i = [], 0
        while any(_prefix(i) + name in a for name in names):
            missing = [_prefix(i) + name for name in names if _prefix(i) + name not in a]
            if missing:
                raise ValueError(f"label tree {i} lacks arrays {missing}")
            own = {"tree." + name: a[_prefix(i) + name] for name in names}
            try:
                trees.append(LabelTree.from_arrays(own, n_features, n_labels))
            except ValueError as e:
                raise ValueError(f"label tree {i}: {e}") from None
            i += 1
        stray = sorted(set(a) - set(forest_array_names(i)))
        if stray:
            raise ValueError(f"arrays {stray[:5]} belong to no label tree 0-{i - 1}" if i else
                             f"arrays {stray[:5]} without label tree 0's")
        return cls(trees)


def forest_array_names(trees: int) -> list[str]:
    """The names of the arrays `to_arrays` writes for a forest of this many trees."""
    return [_prefix(i) + name[len("tree."):] for i in range(trees) for name in LabelTree.array_names()]
