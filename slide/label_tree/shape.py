"""The label tree's shape: which node is whose child and which labels each leaf holds. A model
file's shape is untrusted: `TreeShape.checked` refuses any that is not one tree over every label."""

from __future__ import annotations

import numpy as np


class TreeShape:
    """Nodes numbered parents first (node 0 the root): `children` int64 [nodes, 2] (-1 -1 for a
    leaf), and each leaf's labels, `leaf_labels[leaf_indptr[node]:leaf_indptr[node + 1]]` (none
    for an inner node)."""

    def __init__(self, children: np.ndarray, leaf_indptr: np.ndarray, leaf_labels: np.ndarray) -> None:
        self.children, self.leaf_indptr, self.leaf_labels = children, leaf_indptr, leaf_labels

    @property
    def nodes(self) -> int:
        return self.children.shape[0]

    def parents(self) -> np.ndarray:
        """int64 [nodes]: each node's parent (-1 for the root)."""
        parent = np.full(self.nodes, -1, np.int64)
        inner = np.flatnonzero(self.children[:, 0] >= 0)
        parent[self.children[inner, 0]] = inner
        parent[self.children[inner, 1]] = inner
        return parent

    def leaf_of_label(self, n_labels: int) -> np.ndarray:
        """int64 [labels]: each label's leaf."""
        leaf = np.empty(n_labels, np.int64)
        leaf[self.leaf_labels] = np.repeat(np.arange(self.nodes), np.diff(self.leaf_indptr))
        return leaf

    @classmethod
    def checked(cls, children: np.ndarray, leaf_indptr: np.ndarray, leaf_labels: np.ndarray,
                n_labels: int) -> "TreeShape":
        """The shape these arrays describe, after checking that they are one tree (every node but
        the root the child of exactly one node numbered before it; a node has two children or none)
        whose leaves hold every one of `n_labels` labels once and inner nodes none: else ValueError."""
        if children.ndim != 2 or children.shape[1] != 2 or children.shape[0] < 1:
            raise ValueError(f"the tree's children must be [nodes, 2], got shape {children.shape}")
        nodes = children.shape[0]
        leaf = children[:, 0] < 0
        if np.any((children[:, 0] < 0) != (children[:, 1] < 0)) or np.any(children[leaf] != -1):
            raise ValueError("every node of the tree must have two children or none (-1 -1)")
        inner = np.flatnonzero(~leaf)
        below = children[inner]
        if np.any(below <= inner[:, None]) or np.any(below >= nodes):
            raise ValueError(f"a node's children must be numbered after it and below {nodes}")
        if np.bincount(below.ravel(), minlength=nodes)[1:].tolist() != [1] * (nodes - 1):
            raise ValueError("every node but the root must be the child of exactly one node")
        if leaf_indptr.shape != (nodes + 1,) or leaf_indptr[0] != 0 or np.any(np.diff(leaf_indptr) < 0) \
                or leaf_indptr[-1] != leaf_labels.size:
            raise ValueError(f"the tree's leaf_indptr must run from 0 to {leaf_labels.size} over {nodes} nodes")
        if np.any(np.diff(leaf_indptr)[inner] != 0):
            raise ValueError("an inner node of the tree holds labels")
        if leaf_labels.shape != (n_labels,) or not np.array_equal(np.sort(leaf_labels), np.arange(n_labels)):
            raise ValueError(f"the tree's leaves must hold each of the {n_labels} labels once")
        return cls(children, leaf_indptr, leaf_labels)
