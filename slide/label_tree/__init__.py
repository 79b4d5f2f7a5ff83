"""Label trees beside the network: Parabel's balanced tree of linear classifiers (`LabelTree`),
averaged over several seeds (`LabelForest`)."""

from .clustering import FEW_POINTS_LEAF_SIZE, LEAF_SIZE
from .forest import FEW_POINTS_TREES, LabelForest, forest_array_names
from .shape import TreeShape
from .tree import BEAM, LabelTree

__all__ = ["BEAM", "FEW_POINTS_LEAF_SIZE", "FEW_POINTS_TREES", "LEAF_SIZE", "LabelForest", "LabelTree", "TreeShape", "forest_array_names"]
