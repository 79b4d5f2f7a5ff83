"""A run's epoch average on disk (average.npz): written with each checkpoint once the mean holds
an epoch, so that a resumed run goes on with the same mean; read back as untrusted input."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

from ..early_stopping import parameter_names, snapshot
from ..epoch_average import EpochAverage
from ..model_file import ModelFileError, load_network, read_header, save_network

AVERAGE = "average.npz"
log = logging.getLogger("slide")


def write_average(net: Any, run_dir: Path, average: EpochAverage) -> None:
    """The mean, with the state that names it (a model file whose tables are rebuilt on loading).
    Not again while the folder holds it: checkpoints within an epoch (every 600 s of a long one)
    would otherwise each rewrite a copy of the parameters (0.4 GB at Amazon-670K's shape)."""
    state = average.state()
    if average.parameters() is None or average.on_disk == state:
        return
    save_network(net, run_dir / AVERAGE, include_optimizer=False, parameters=average.parameters(),
                 extra={"average": state})
    average.on_disk = state


def mean_on_disk(run_dir: Path, average: Optional[EpochAverage]) -> Optional[tuple[Path, dict]]:
    """(average.npz, the mean it holds) when the file holds `average`'s mean as it is now, else None."""
    if average is None or average.parameters() is None or average.on_disk != average.state():
        return None
    return run_dir / AVERAGE, average.parameters()


def read_average(net: Any, run_dir: Path, state: Optional[dict], first: int) -> EpochAverage:
    """The average a checkpoint's position names (`state`; None: a new run or no mean yet, which
    begins at epoch `first`). A resumed mean keeps its own first epoch, even when --epochs moved
    the run's. A missing file, or one of another network, is an error; one that is not the mean
    the checkpoint names (a run killed between writing the two) is dropped with a warning, and
    the mean begins again at the next epoch end."""
    if state is None or state["epochs"] == 0:
        return EpochAverage(first)
    path = run_dir / AVERAGE
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: the checkpoint names the mean of {state['epochs']} epochs, "
                                f"but {AVERAGE} is missing")
    header = read_header(path)
    saved = (header.get("extra") or {}).get("average")
    if saved != state:
        log.warning("%s is not the mean the checkpoint names (the checkpoint: %s; the file: %s); averaging "
                    "starts again", path, state, saved)
        return EpochAverage(first)
    mean = snapshot(load_network(type(net), path, threads=net.threads, header=header))
    own = net.weights()
    if set(mean) != set(parameter_names(net)) or any(mean[k].shape != own[k].shape for k in mean):
        raise ModelFileError(f"{path}: the mean of another network than this run's")
    average = EpochAverage(state["first"])
    average.resume(mean, state)
    average.on_disk = state
    return average
