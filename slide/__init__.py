"""slide: train networks with huge output layers on CPUs by computing only the output neurons that
locality-sensitive hash tables pick for each sample (SLIDE)."""

from . import datasets, metrics
from ._core import available_simd_levels, simd_level
from ._version import __version__
from .config import LSHConfig
from .network import History, Network

__all__ = ["Network", "LSHConfig", "History", "datasets", "metrics", "simd_level", "available_simd_levels",
           "__version__"]
