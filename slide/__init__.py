"""slide: train networks with huge output layers on CPUs by computing only the output neurons that
locality-sensitive hash tables pick for each sample (SLIDE)."""

import os as _os
import warnings as _warnings

from .openmp_wait import import_engine as _import_engine
from .parallel_work_floor import apply_environment as _apply_parallel_work_floor

# The engine first, so that its OpenMP runtime loads with slide's wait settings; then its floor.
_apply_parallel_work_floor(_import_engine())

from . import datasets, metrics, optimizers
from ._core import available_simd_levels, built_simd_levels, simd_level
from ._version import __version__
from .config import LSHConfig
from .modes import MODES
from .network import History, Network, TrainingDiverged
from .skipgram import SkipGram

if _os.environ.get("SLIDE_SIMD", "") not in ("", *built_simd_levels()):
    _warnings.warn(f"SLIDE_SIMD={_os.environ['SLIDE_SIMD']!r} is not one of {', '.join(built_simd_levels())}; "
                   f"using the best level this CPU supports ({simd_level()})", RuntimeWarning, stacklevel=2)

__all__ = ["Network", "SkipGram", "LSHConfig", "MODES", "History", "TrainingDiverged", "datasets", "metrics", "optimizers", "simd_level",
           "available_simd_levels", "built_simd_levels", "__version__"]
