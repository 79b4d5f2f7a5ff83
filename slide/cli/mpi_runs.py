"""What makes a run folder an MPI run's, and the settings an MPI job takes differently from one
process: checked before anything trains, so a run never silently trains other than it says (a
setting ignored, a resume starting from scratch, a run folder continued by the wrong launcher)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..config import LSHConfig
from ..datasets.fingerprint import check_unchanged
from ..modes import MODES, mode_of

MPI_CHECKPOINT = "checkpoint"  # the sharded checkpoint folder of an MPI run (train_mpi.CHECKPOINT)


def mpi_ranks_of(run_dir: Path, cfg: dict) -> "int | None":
    """The ranks an MPI run ran on, or None for a single process's run."""
    ranks = cfg.get("ranks")
    if isinstance(ranks, int) and not isinstance(ranks, bool) and ranks > 1:
        return ranks
    if (Path(run_dir) / MPI_CHECKPOINT).is_dir():  # a config that lost its "ranks": the checkpoint still says
        return -1
    return None


def refuse_mpi_run(run_dir: Path, cfg: dict) -> None:
    """A single process must not resume an MPI run: it would find no checkpoint.npz and start over."""
    ranks = mpi_ranks_of(run_dir, cfg)
    if ranks is not None:
        n = ranks if ranks > 0 else "N"
        raise ValueError(f"{run_dir} is a run trained over {ranks if ranks > 0 else 'several'} MPI ranks; resume it "
                         f"under mpirun with as many ranks: `mpirun -n {n} slide train --resume {run_dir}`")


def check_mpi_resume(run_dir: Path, cfg: dict) -> None:
    """An MPI job resumes only an MPI run, and only on the data it started with."""
    if mpi_ranks_of(run_dir, cfg) is None:
        raise ValueError(f"{run_dir} is a run of a single process (its checkpoint is one file, which does not shard "
                         f"over ranks); resume it without mpirun: `slide train --resume {run_dir}`")
    check_unchanged(cfg.get("data_files", []))


# Settings of a single process's run loop (slide.runs), which an MPI run does not have: it evaluates
# on validation and checkpoints at every epoch's end, and tests on the whole test file at the end.
IGNORED = ("eval_every", "eval_samples", "final_eval_samples", "eval_budget", "checkpoint_every", "end_checkpoint_after")


def refuse_settings(cfg: dict, args: argparse.Namespace) -> None:
    """Settings an MPI job cannot honour, refused instead of recorded and ignored."""
    if cfg.get("stream"):
        raise ValueError("stream (--stream) trains a single process from shards read one at a time; under mpirun "
                         "each rank reads its own byte range of the training file into memory, which is what "
                         "spreads a large file over the ranks. Drop --stream (and stream = true in --config)")
    if cfg["network"].get("mode") == "sample":
        raise ValueError("mode 'sample' (--mode sample) trains an active set per sample, which cannot shard the "
                         "output layer over MPI ranks; under mpirun use --mode batch or --mode dense")
    given = _given_run_settings(args)
    ignored = [name for name in IGNORED if name in given]
    if cfg.get("on_divergence", "stop") != "stop":
        ignored.append("on_divergence")
    if ignored:
        raise ValueError(f"{', '.join(ignored)} set the periodic evaluations, checkpoints and divergence backoff of a "
                         "single process's run; under mpirun a run evaluates and checkpoints at each epoch's end and "
                         "stops when training diverges. Drop them (flags, --set or --config)")
    train = cfg.get("train_file")
    if train and Path(train).is_dir():
        raise ValueError(f"{train} is a shard folder; under mpirun each rank reads its byte range of an Extreme "
                         "Classification text file: give the text file the folder was converted from")


def batch_mode_under_mpi(cfg: dict, args: argparse.Namespace) -> "str | None":
    """A named dataset's preset in the per-sample mode trains in the batch mode under MPI, which
    shards its output layer (the per-sample mode cannot); what was changed is said. A per-sample
    mode the user asked for is refused, naming the flags that would work."""
    if cfg["network"].get("dense") or mode_of(LSHConfig.from_dict(cfg["lsh"])) != "sample":
        return None
    given = _given_lsh(args)
    if cfg["network"].get("mode") == "sample" or "batch_active" in given:
        raise ValueError("mode 'sample' (per-sample active sets, lsh.batch_active = 0) cannot shard its output "
                         "layer over MPI ranks; under mpirun use --mode batch or --mode dense")
    cfg["lsh"].update({k: v for k, v in MODES["batch"].lsh.items() if k not in given})
    return ("under MPI the output layer trains in the batch mode (--mode batch): the preset's per-sample mode "
            "cannot shard it over ranks")


def _given_run_settings(args: argparse.Namespace) -> set[str]:
    """The run settings the user gave, by flag, --set or --config."""
    from .run_config import given_flags as _given_flags, read_toml as _read_toml

    given = set(_given_flags(args))
    if getattr(args, "config", None):
        given |= set(_read_toml(args.config))
    return given


def _given_lsh(args: argparse.Namespace) -> set[str]:
    """The [lsh] settings the user gave, by --set or --config."""
    from .run_config import assignments as _assignments, read_toml as _read_toml

    given = {name for _, name, _ in _assignments(args, ("lsh",))}
    if getattr(args, "config", None):
        table: Any = _read_toml(args.config).get("lsh", {})
        given |= set(table) if isinstance(table, dict) else set()
    return given
