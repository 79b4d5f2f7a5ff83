"""A label tree beside the network: Parabel's balanced tree of linear classifiers (`LabelTree`)."""

from .clustering import FEW_POINTS_LEAF_SIZE, LEAF_SIZE
from .shape import TreeShape
from .tree import BEAM, LabelTree

__all__ = ["BEAM", "FEW_POINTS_LEAF_SIZE", "LEAF_SIZE", "LabelTree", "TreeShape"]
