"""Which training points each of the label tree's classifiers learns from (Parabel's): a node's
classifier, from the points that reach its parent (those with a label below the parent),
positive where the point has a label below the node; a label's, from the points that reach its
leaf, positive where the point has the label (cpp/label_tree/task_points.h). Tasks are numbered
nodes first (the root's has no points), then labels."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core import tree_task_points
from .shape import TreeShape


def task_points(shape: TreeShape, Y: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr int64 [nodes + labels + 1], rows int64, positive uint8): each task's points, rows
    ascending."""
    Y = sp.csr_matrix(Y)
    return tree_task_points(shape.children.ravel(), shape.leaf_indptr, shape.leaf_labels, Y.indptr.astype(np.int64),
                            Y.indices.astype(np.int32), Y.shape[1])
