"""A training run as `slide train` drives it: a run folder (`folder`: config.json, metrics.jsonl,
the lock), checkpoints that hold the loop's position (`checkpoint`), the run's settings
(`settings`), and the run loop around the shared training loop (`loop`)."""

from ..training.position import Position
from ..training.sources import TrainingSource, streamed_source
from ..best_epoch import BEST
from .checkpoint import load_checkpoint, save_checkpoint
from .folder import (CHECKPOINT, CONFIG, METRICS, MODEL, PLOT, RUN_FILES, append_metrics, create_run_dir,
                     lock_run_dir, read_config, read_metrics, rewind_metrics, write_config)
from .loop import PLOT_AFTER_SECONDS, run
from .settings import RunSettings
from .sources import in_memory_source

__all__ = ["BEST", "CHECKPOINT", "CONFIG", "METRICS", "MODEL", "PLOT", "PLOT_AFTER_SECONDS", "RUN_FILES", "Position", "RunSettings",
           "TrainingSource", "append_metrics", "create_run_dir", "in_memory_source", "load_checkpoint",
           "lock_run_dir", "read_config", "read_metrics", "rewind_metrics", "run", "save_checkpoint", "streamed_source",
           "write_config"]
