"""The label tree's shape: labels split in two, recursively, by balanced spherical 2-means over
their PIFA vectors (each label's training points' unit feature vectors summed and normalised;
Prabhu et al., Parabel, 2018), until a node holds at most `leaf_size` labels
(cpp/label_tree/tree_shape.h). Labels whose points use similar features end up under one node,
so a node's classifier tells apart groups of labels a query's words can separate."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core import tree_shape
from ..datasets.synthetic import unit_rows
from .shape import TreeShape

# A node with more labels than this is split: 32, not omikuji's and Parabel's 100 (the LSH preset's
# too). One tree alone, test P@1 / P@5 and seconds to fit it at 2 threads, two seeds each, by
# script: debian-deps-by-source 0.635-0.637 / 0.318-0.319 at 100 in 7.0-9.8 s, 0.636 / 0.318-0.319
# at 32 in 3.9-7.9 s; debian-deps 0.691-0.696 / 0.361 at 100 in 14.1-14.9 s, 0.691-0.695 /
# 0.360-0.361 at 32 in 6.8-7.8 s (both beside another job); debian-rdeps 0.223-0.224 / 0.105 at 100
# in 3.7-4.0 s, 0.221-0.224 / 0.103-0.105 at 32 in 3.0-3.1 s. Smaller leaves send fewer points to
# each label's classifier, which is most of the work.
LEAF_SIZE = 32
# Where the labels have so few points that the tree's own per-label classifiers re-score in the
# re-ranker's place (slide.prediction.methods.TREE_RESCORES_BELOW), the preset's leaves hold 100
# labels, so each classifier learns from the points of 100 labels' leaf, not 32's. Slide with no
# flags on debian-rdeps (3.8 points a label), seeds 0-2, test P@1: 0.2265, 0.2256, 0.2268 against
# 0.2252, 0.2239, 0.2249 at 32 (every seed up), P@5 0.1084 against 0.1082, 0.5-0.7 s more training.
# debian-deps and -by-source cut to their first 8,000 training points (4.3 points a label), seeds
# 0-2: 0.4401 / 0.2167 -> 0.4421 / 0.2183 and 0.4503 / 0.2162 -> 0.4538 / 0.2167. Where the re-ranker
# re-scores, larger leaves only cost time: debian-deps at 6.9 points a label, 7 s for nothing; its
# first 24,000 points (5.8 a label), seeds 0-1, 0.5702 / 0.2935 -> 0.5696 / 0.2930 in 1.6 s more.
FEW_POINTS_LEAF_SIZE = 100
# 2-means stops when an iteration improves the split's objective (each label's similarity to its
# side's centroid) by less than this fraction (omikuji's), or after MAX_ITERATIONS. On debian-rdeps
# (one tree alone, test P@1 / P@5, by script) 20 iterations took 1.6 s to shape the tree and 7.2 s
# to fit it, with no better ranking than 4 (0.221 / 0.106 against 0.219-0.224 / 0.104-0.106 over
# three seeds, 3.5-3.6 s to fit): the better settled splits sent more points down each node.
TOLERANCE = 1e-4
MAX_ITERATIONS = 4


def label_vectors(X: sp.csr_matrix, Y: sp.csr_matrix) -> sp.csr_matrix:
    """float32 [labels, features]: each label's PIFA vector, its points' rows of X (unit rows)
    summed and scaled to unit norm; a label without points has a zero row."""
    return unit_rows(sp.csr_matrix(Y, dtype=np.float32).T @ X)


def build_shape(V: sp.csr_matrix, leaf_size: int = LEAF_SIZE, seed: int = 0, threads: int = 1) -> TreeShape:
    """Splits the rows of V (labels) until every leaf holds at most `leaf_size`, breadth first so
    that a node's children come after it; the same shape at any thread count."""
    children, leaf_indptr, leaf_labels = tree_shape(V.indptr, V.indices, V.data, V.shape[1], int(leaf_size),
                                                    MAX_ITERATIONS, TOLERANCE, int(seed), max(1, int(threads)))
    return TreeShape(children.reshape(-1, 2), leaf_indptr, leaf_labels)
