"""A run's checkpoint: the model, its optimizer state and tables, and the loop's `Position` in one
file, written atomically; read back only once the position in its header matches its schema."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from ..best_epoch import BestEpoch
from ..epoch_average import EpochAverage
from ..file_schemas import POSITION, check
from ..model_file import ModelFileError, read_header
from ..network import Network
from ..schema import Record
from ..training.position import Position
from .average_file import mean_on_disk, write_average
from .folder import CHECKPOINT, METRICS

# What a checkpoint's header holds besides a model's (a model.npz copied over one lacks it).
_CHECKPOINT_EXTRA = Record(required={"position": POSITION}, extra=True, what="a JSON object")


def save_checkpoint(net: Network, run_dir: Path, pos: Position, best: Optional[BestEpoch] = None,
                    average: Optional[EpochAverage] = None) -> None:
    t0 = time.perf_counter()
    # Both before the checkpoint that names them, so its best epoch and its mean are always on disk;
    # the mean first, so that a best epoch that is the mean is a link to its file.
    if average is not None:
        write_average(net, run_dir, average)
        pos.average = average.state()
    if best is not None:
        best.write(net, run_dir, same_file=mean_on_disk(run_dir, average))
    metrics = run_dir / METRICS
    pos.metrics_bytes = metrics.stat().st_size if metrics.exists() else 0
    pos.checkpoints += 1
    # The file records the time of the writes before it; this one's is added once it is written.
    net.save(run_dir / CHECKPOINT, extra={"position": pos.__dict__})
    pos.checkpoint_seconds += time.perf_counter() - t0



def load_checkpoint(run_dir: Path, threads: Optional[int] = None) -> tuple[Network, Position]:
    path = run_dir / CHECKPOINT
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} has no {CHECKPOINT} to resume from")
    pos = _saved_position(read_header(path), path)  # before any weights are read: a model.npz is no checkpoint
    return Network.load(path, threads=threads), pos


def _saved_position(header: dict, path: Path) -> Position:
    """The training position a checkpoint's header holds, checked against its declared schema
    (file_schemas.POSITION): a negative row would loop forever, an unknown field crash."""
    extra = check(header["extra"], _CHECKPOINT_EXTRA, str(path), error=ModelFileError, field="extra")
    return Position(**{"metrics_bytes": None, **extra["position"]})



def checkpoint_position(run_dir: Path) -> Optional[Position]:
    path = run_dir / CHECKPOINT
    return _saved_position(read_header(path), path) if path.exists() else None


def last_good(net: Network, run_dir: Path) -> tuple[Network, Position]:
    """The newest checkpoint, or (without one) the run's initial state, which its seed reproduces."""
    if (run_dir / CHECKPOINT).exists():
        return load_checkpoint(run_dir, threads=net.threads)
    return Network.from_config(net.get_config()), Position()


