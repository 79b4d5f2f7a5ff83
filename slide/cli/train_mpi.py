"""`mpirun -n N slide train ...`: one network trained over the N ranks of an MPI job.

Each rank reads its own share of the training data (its byte range of an XC text file), holds its
block of the output layer, and trains its share of every batch (slide.distributed). Rank 0 owns
the run folder's config and metrics; every rank writes its shard of the checkpoint after each
epoch, and `--resume` restarts from the last complete one. A rank that fails stops the whole job
(MPI_Abort) instead of leaving the others waiting for it."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from .. import runs
from ..datasets.synthetic import Split
from ..datasets.fingerprint import fingerprint
from ..epoch_average import NO_AVERAGING
from ..distributed.xc_ranges import read_xc_shares
from ..distributed.agree import RankError, on_every_rank, same_files
from ..distributed.rows import check_rows, first_rows, held_out_share
from ..network import Network, TrainingDiverged
from .mpi_runs import batch_mode_under_mpi, check_mpi_resume, refuse_settings

CHECKPOINT = "checkpoint"  # a sharded model folder (slide.distributed.checkpoint)
MODEL = "model"
# Rank 0's lock on the run folder (slide.run_lock), held until this rank's process ends: with
# its command, or at MPI_Abort, which no `finally` outlives.
_HELD: list = []

# What Open MPI, MPICH/Hydra and PMIx launchers set in every rank's environment.
_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE")
_LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_")


def mpi_ranks() -> int:
    """The ranks of the MPI job this process was started in by mpirun/srun (1: not in one)."""
    for name in _SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


def environment_outside_mpi_job() -> dict[str, str]:
    """This process's environment without an MPI job's variables: an mpirun started with it
    starts a job of its own instead of joining this process's."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES)}


def main(args: argparse.Namespace) -> int:
    try:
        from mpi4py import MPI
    except ImportError:
        print(f"slide: error: started by mpirun with {mpi_ranks()} ranks, but mpi4py is not installed: "
              "pip install \"slide[mpi]\"", file=sys.stderr)
        return 2
    from ..distributed.communicator import Communicator

    comm = Communicator(MPI.COMM_WORLD)
    try:
        return _main(args, comm)
    except RankError as e:  # every rank knows it: rank 0 says it once, for the job
        if comm.rank == 0:
            print(f"slide: error: {e}", file=sys.stderr, flush=True)
            comm.abort(2)
        comm.barrier()  # rank 0 never joins: its abort ends this rank, after it has printed the reason
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"slide: error on rank {comm.rank}: {e}", file=sys.stderr, flush=True)
        comm.abort(2)
    except TrainingDiverged as e:  # the exit code of a single process's diverged run
        print(f"slide: error on rank {comm.rank}: {e}", file=sys.stderr, flush=True)
        comm.abort(3)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM from mpirun ending the job after another rank failed
        print(f"slide: rank {comm.rank} stopped", file=sys.stderr, flush=True)
        comm.abort(130)
    except BaseException:  # anything else: say where, then stop every rank
        print(f"slide: rank {comm.rank} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        comm.abort(1)
    return 1


def _say(comm, *text: Any) -> None:
    if comm.rank == 0:
        print(*text, flush=True)


def _resolve_on_rank0(args: argparse.Namespace, comm) -> tuple[dict, Path]:
    """The run's settings and folder, decided by rank 0 (which writes the folder) and shared."""
    from .run_config import default_run_dir as _default_run_dir, given_flags as _given_flags, \
        refuse_changes_on_resume as _refuse_changes_on_resume, resolve_config

    answer: Any = None
    if comm.rank == 0:
        try:
            if args.resume:
                _refuse_changes_on_resume(args)
                _HELD.append(runs.lock_run_dir(args.resume))
                run_dir, cfg = args.resume, runs.read_config(args.resume)
                check_mpi_resume(run_dir, cfg)
                if "epochs" in _given_flags(args):
                    cfg["epochs"] = _given_flags(args)["epochs"]
                    runs.write_config(run_dir, cfg)  # the run now plans this many (slide info, later resumes)
            else:
                cfg = resolve_config(args)
                refuse_settings(cfg, args)
                if not cfg.get("train_file"):  # a user's file gets its mode from the data's shape (_main)
                    changed = batch_mode_under_mpi(cfg, args)
                    if changed:
                        print(changed, flush=True)
                run_dir = args.out or _default_run_dir(cfg.get("dataset") or Path(cfg["train_file"]).name)
                _HELD.append(runs.create_run_dir(run_dir, overwrite=args.overwrite))
                cfg["ranks"] = comm.size
                runs.write_config(run_dir, cfg)
            answer = (cfg, run_dir)
        except (ValueError, FileNotFoundError, OSError) as e:
            answer = str(e)
    answer = comm.broadcast(answer)
    if isinstance(answer, str):
        raise RankError(answer, 0)
    return answer


def _block(split: Split, comm) -> Split:
    n = len(split)
    rows = slice(n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size)
    return Split(split.X[rows], split.Y[rows])


def _load_data(cfg: dict, comm) -> tuple[Split, Split, Optional[Split], Any]:
    """This rank's training, test and validation rows, and the source (dimensions, vocabulary)."""
    from .sources import identifying_files, load_file, resolve, shuffled

    seed = cfg.get("seed", 0)
    if cfg.get("train_file") and not str(cfg["train_file"]).lower().endswith((".arff", ".arff.gz")):
        t0 = time.perf_counter()
        train_path, test_path = Path(cfg["train_file"]), Path(cfg["test_file"])
        files = identifying_files(train_path, test_path)
        same_files(comm, zip(("training file", "test file"), files))
        train = first_rows(read_xc_shares(train_path, comm), cfg.get("train_samples"), comm)
        check_rows(train, train_path, comm)
        test = on_every_rank(comm, _test_split, train_path, test_path, train, load_file)
        test = _block(shuffled(test, seed), comm)
        if cfg.get("test_samples"):
            test = _block(Split(test.X[:cfg["test_samples"]], test.Y[:cfg["test_samples"]]), comm)
        validation = None  # held out once the shape preset has said how much (_main)
        n = comm.total(len(train))
        _say(comm, f"data: {Path(cfg['train_file']).name}, {int(n):,} train points read by byte ranges over "
                   f"{comm.size} ranks ({len(train):,} on rank 0), {train.X.shape[1]:,} features, "
                   f"{train.Y.shape[1]:,} labels ({time.perf_counter() - t0:.1f}s)")
        source = argparse.Namespace(input_dim=train.X.shape[1], output_dim=train.Y.shape[1], vocabulary=None,
                                    title=Path(cfg["train_file"]).name, files=files, train_points=int(n))
        return train, test, validation, source
    quiet = contextlib.redirect_stdout(io.StringIO()) if comm.rank else contextlib.nullcontext()
    with quiet:  # every rank draws (or reads) the named set; rank 0 says so
        source = on_every_rank(comm, resolve, cfg)
    same_files(comm, (("data file", f) for f in source.files))
    if source.memory is None:
        raise ValueError(f"{source.title} is streamed or a word corpus; under MPI slide trains on XC data in memory")
    return (_block(source.memory, comm), _block(source.test, comm),
            _block(source.validation, comm) if source.validation is not None else None, source)


def _main(args: argparse.Namespace, comm) -> int:
    from .run_config import apply_shape_preset

    cfg, run_dir = _resolve_on_rank0(args, comm)
    if args.resume and cfg.get("ranks", comm.size) != comm.size:
        _say(comm, f"{run_dir} ran on {cfg['ranks']} ranks and this job has {comm.size}: its checkpoint is re-read "
                   "only by as many; re-shard it with `slide reshard` or resume with the same -n")
    train, test, validation, source = _load_data(cfg, comm)
    if cfg.get("train_file") and not args.resume:  # as one process does: the data's shape decides the rest
        quiet = contextlib.redirect_stdout(io.StringIO()) if comm.rank else contextlib.nullcontext()
        with quiet:
            apply_shape_preset(cfg, source)
    if not args.resume and comm.rank == 0:  # what resume checks the data against, as one process's run does
        cfg["data_files"] = [fingerprint(p) for p in source.files]
        runs.write_config(Path(run_dir), cfg)
    if cfg.get("train_file") and cfg.get("validation_split"):
        train, validation = held_out_share(train, cfg["validation_split"], cfg.get("seed", 0), cfg["train_file"], comm)
    checkpoint = Path(run_dir) / CHECKPOINT
    net, done = _start_network(args, cfg, run_dir, source, comm)
    _say(comm, f"{net}; {net.memory_bytes / 2**30:.2f} GiB on rank 0; run folder {run_dir}")
    epochs = int(cfg["epochs"])
    spent = {"train_seconds": 0.0, "checkpoint_seconds": 0.0, "fusion_seconds": 0.0}  # rank 0's, as slide.runs records

    def after_epoch(network: Network, metrics: dict) -> None:
        epoch = done + metrics["epoch"]
        t0 = time.perf_counter()
        network.save(checkpoint, extra={"epoch": epoch})
        spent["checkpoint_seconds"] += time.perf_counter() - t0
        if comm.rank == 0:
            runs.append_metrics(Path(run_dir), {"kind": "epoch", **metrics, "epoch": epoch, "ranks": comm.size,
                                                "checkpoint_seconds": time.perf_counter() - t0})
            print(f"epoch {epoch}/{epochs}: loss {metrics['loss']:.4f}, {metrics['samples_per_second']:,.0f} "
                  "samples/s" + "".join(f", val {k[4:]} {v:.4f}" for k, v in metrics.items()
                                         if k.startswith("val_P@")), flush=True)

    t_fit = time.perf_counter()
    if done < epochs:
        # `is None`, not `if validation`: a rank may hold none of the rows, and still evaluates
        judged = {} if validation is None else dict(
            validation_data=(validation.X, validation.Y), early_stopping=cfg.get("early_stopping"),
            monitor=cfg.get("monitor", "P@1"), averaging=cfg.get("averaging") or NO_AVERAGING)
        history = net.fit(train.X, train.Y, epochs=epochs - done, batch_size=cfg["batch_size"], **judged,
                          progress=not args.quiet, callback=after_epoch, shuffle=cfg.get("shuffle", True))
        spent["fusion_seconds"] = history.fusion_seconds
    spent["train_seconds"] = time.perf_counter() - t_fit - spent["checkpoint_seconds"] - spent["fusion_seconds"]
    t0 = time.perf_counter()
    report = net.evaluate(test.X, test.Y)
    points = int(comm.total(len(test)))
    net.save(Path(run_dir) / MODEL, include_optimizer=cfg.get("final_model_optimizer", False))
    final_seconds = time.perf_counter() - t0
    if comm.rank == 0:
        runs.append_metrics(Path(run_dir), {"kind": "final", **report, "test_points": points, "ranks": comm.size,
                                            "seconds": final_seconds, **{k: round(v, 3) for k, v in spent.items()}})
    _say(comm, f"test (exact, {points:,} points): " + ", ".join(f"{k} {v:.4f}" for k, v in report.items()
                                                                 if k.startswith("P@")))
    _say(comm, f"saved {Path(run_dir) / MODEL} ({comm.size} shards; `slide reshard` makes one file of it)")
    _say(comm, f"time (rank 0): training {spent['train_seconds']:.1f}s (the epochs and their validation), "
               f"checkpoints {spent['checkpoint_seconds']:.1f}s, re-ranker and its weight "
               f"{spent['fusion_seconds']:.1f}s, final evaluation and model {final_seconds:.1f}s")
    return 0


def _start_network(args: argparse.Namespace, cfg: dict, run_dir: Path, source: Any, comm) -> tuple[Network, int]:
    """The network at its last checkpoint and the epochs it has done, or new; a rank that cannot
    load or build its part stops every rank with one message."""
    from ..distributed.checkpoint import read_manifest
    from .run_config import build_network

    threads = _given_threads(args, cfg)
    checkpoint = Path(run_dir) / CHECKPOINT
    if args.resume and (checkpoint / "manifest.json").is_file():
        net = on_every_rank(comm, lambda: Network.load(checkpoint, comm=comm, threads=threads))
        done = int(read_manifest(checkpoint)["extra"].get("epoch", 0))
        _say(comm, f"resuming {run_dir} at epoch {done + 1} (step {net._core.step:,}) on {comm.size} ranks")
        return net, done
    if threads is not None:
        cfg["threads"] = threads
    return on_every_rank(comm, build_network, cfg, source, comm), 0


def _given_threads(args: argparse.Namespace, cfg: dict) -> Optional[int]:
    return args.threads if getattr(args, "threads", None) is not None else cfg.get("threads")


def _test_split(train_path: Path, test_path: Path, train: Split, load_file) -> Split:
    """The test file, which every rank reads whole, checked against the training file's shape."""
    test = load_file(test_path)
    if train.X.shape[1] != test.X.shape[1] or train.Y.shape[1] != test.Y.shape[1]:
        raise ValueError(f"{train_path} and {test_path} disagree on the number of features or labels "
                         f"({train.X.shape[1]} x {train.Y.shape[1]} vs {test.X.shape[1]} x {test.Y.shape[1]})")
    return test
