"""A run's checkpoint: the model, its optimizer state and tables, and the loop's `Position` in one
file, written atomically; read back only once the position in its header matches its schema."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from ..atomic_files import fsync_folder
from ..best_epoch import BestEpoch
from ..early_stopping import parameter_names
from ..epoch_average import EpochAverage
from ..file_schemas import POSITION, check
from ..model_file import ModelFileError, read_header
from ..network import Network
from ..paths import output_file
from ..schema import Record
from ..training.position import Position
from .average_file import mean_on_disk, write_average
from .folder import CHECKPOINT, METRICS

# What a checkpoint's header holds besides a model's (a model.npz copied over one lacks it).
_CHECKPOINT_EXTRA = Record(required={"position": POSITION}, extra=True, what="a JSON object")


def save_checkpoint(net: Network, run_dir: Path, pos: Position, best: Optional[BestEpoch] = None,
                    average: Optional[EpochAverage] = None) -> None:
    t0 = time.perf_counter()
    # The best epoch and the mean both reach the disk before the checkpoint that names them; the
    # mean first, so that a best epoch that is the mean is a link to its file.
    if average is not None:
        write_average(net, run_dir, average)
        pos.average = average.state()
    metrics = run_dir / METRICS
    pos.metrics_bytes = metrics.stat().st_size if metrics.exists() else 0
    pos.checkpoints += 1
    # The file records the time of the writes before it; this one's is added once it is written.
    extra = {"position": pos.__dict__}
    state = net.weights()
    if best is not None and best.unwritten and best.holds({name: state[name] for name in parameter_names(net)}):
        _save_beside_best(net, run_dir, extra, best)
    else:
        if best is not None:
            _write_best(net, run_dir, best, average)
        net.save(run_dir / CHECKPOINT, extra=extra)
    pos.checkpoint_seconds += time.perf_counter() - t0


def _write_best(net: Network, run_dir: Path, best: BestEpoch, average: Optional[EpochAverage]) -> None:
    """best.npz, as a link to average.npz where the best model is the mean it holds (as at the end
    of most debian-deps runs: 144 MB fewer), else as a file of its own (if newer than the last)."""
    mean = mean_on_disk(run_dir, average)
    if best.unwritten and mean is not None and best.holds(mean[1]):
        best.write_as(net, run_dir, mean[0])
    else:
        best.write(net, run_dir)


def _save_beside_best(net: Network, run_dir: Path, extra: dict, best: BestEpoch) -> None:
    """The checkpoint when the best epoch kept is the network as it is now (a run still improving,
    as debian-rdeps is at its last epoch): best.npz becomes a second name for the checkpoint's
    file (157 MB fewer there), made before that file takes the checkpoint's name, so that a
    checkpoint never names a best epoch whose parameters are not on disk. A kill in between leaves
    the staged file, a temporary that the next run removes."""
    path = output_file(run_dir / CHECKPOINT, "checkpoint")
    staged = run_dir / f".{CHECKPOINT}.{os.getpid()}.staged.tmp"
    try:
        net.save(staged, extra=extra)
        best.write_as(net, run_dir, staged)
        os.replace(staged, path)
    finally:
        staged.unlink(missing_ok=True)
    fsync_folder(run_dir)


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


