"""A training run as the CLI drives it: a run folder with the resolved config, metrics.jsonl,
atomic checkpoints (model, optimizer, tables and the loop's position in one file), the final model
and a plot; periodic evaluation on a shuffled test sample; exact resume after Ctrl-C or a kill;
divergence (NaN/inf) either stops the run or backs off the learning rate from the last good
checkpoint, which is never overwritten by a diverged model."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np

from .datasets.stream import Stream as DataStream
from .datasets.synthetic import Split
from .atomic_files import atomic_write, remove_stale_temporaries
from .file_schemas import METRICS_RECORD, POSITION, check, check_run_config
from .json_files import is_regular_or_absent, read_json, read_json_lines
from .model_file import ModelFileError, read_header
from .schema import Record
from .no_follow import append_text, truncate_file
from .run_lock import LOCK, RunLock, lock_run
from .network import Network, TrainingData, TrainingDiverged, TrainingInterrupted
from .plots import load_matplotlib, plot_progress
from .progress import progress_bar
from .best_epoch import BEST, BestEpoch
from .early_stopping import BestTracker
from .settings import RUN
from .schedules import lr_multiplier

log = logging.getLogger("slide")

CHECKPOINT = "checkpoint.npz"
MODEL = "model.npz"
METRICS = "metrics.jsonl"
CONFIG = "config.json"
PLOT = "progress.png"
# What a checkpoint's header holds besides a model's (a model.npz copied over one lacks it).
_CHECKPOINT_EXTRA = Record(required={"position": POSITION}, extra=True, what="a JSON object")


@dataclass
class Position:
    """Where a run is: the next row of segment `segment` of epoch `epoch`."""

    epoch: int = 0
    segment: int = 0
    row: int = 0
    samples: int = 0            # trained so far, all epochs
    wall_seconds: float = 0.0   # training time so far (evaluation excluded)
    since_eval: int = 0
    loss_since_eval: float = 0.0
    labelled_since_eval: int = 0
    metrics_bytes: Optional[int] = 0  # length of metrics.jsonl when saved; None: unknown (older checkpoint)
    best: Optional[dict] = None  # the validation BestTracker's state
    stopped_early: bool = False
    # What the run spent outside training, so the budget holds across a resume and can be reported.
    eval_seconds: float = 0.0
    evaluations: int = 0
    checkpoint_seconds: float = 0.0
    checkpoints: int = 0


@dataclass
class TrainingSource:
    """Training data as segments per epoch: in-memory data is one segment; a corpus or a shard
    folder is many. `segments(epoch, start)` yields (data, order) from the `start`-th segment on."""

    segments: Callable[[int, int], Iterator[tuple[TrainingData, np.ndarray]]]
    samples_per_epoch: int


def in_memory_source(net: Network, train: Split, seed: int, shuffle: bool = True) -> TrainingSource:
    data = net.prepare(train.X, train.Y)

    def segments(epoch: int, start: int = 0):
        if start == 0:
            yield data, (np.random.default_rng([seed, epoch]).permutation(len(data)) if shuffle
                         else np.arange(len(data)))

    return TrainingSource(segments, len(data))


def streamed_source(net: Network, stream: "DataStream", batch_size: int) -> TrainingSource:
    """A shard folder read shard by shard; each shard is prepared on the reading thread."""
    prepare = lambda split: net.prepare(split.X, split.Y)  # noqa: E731

    def segments(epoch: int, start: int = 0):
        for segment in stream.segments(epoch, batch_size=batch_size, start=start, prepare=prepare):
            yield segment.data, segment.order

    return TrainingSource(segments, stream.samples_per_epoch)



@dataclass
class RunSettings:
    epochs: int
    batch_size: int
    eval_every: int            # samples between periodic evaluations
    eval_samples: int          # test points in a periodic evaluation
    checkpoint_every: float    # seconds between checkpoints
    final_eval_samples: Optional[int] = None  # None: the whole test set
    # Test evaluations during training (periodic and at epoch ends) run only while their time is at
    # most this share of the training time so far; None: always. The final one always runs.
    eval_budget: Optional[float] = None
    final_model_optimizer: bool = False  # model.npz also holds the optimizer state
    on_divergence: str = "stop"  # or "backoff": reload the last good checkpoint, lower the learning rate
    backoff_factor: float = 0.5
    max_backoffs: int = 3
    progress: bool = True
    early_stopping: Optional[int] = None  # epochs without a better validation monitor before stopping
    monitor: str = "P@1"
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """ValueError naming the first setting out of its range (settings.RUN)."""
        for name in ("epochs", "batch_size", "eval_every", "eval_samples", "checkpoint_every", "on_divergence",
                     "monitor"):
            RUN[name].check(getattr(self, name))
        for name in ("final_eval_samples", "early_stopping", "eval_budget"):
            if getattr(self, name) is not None:
                RUN[name].check(getattr(self, name))


def save_checkpoint(net: Network, run_dir: Path, pos: Position, best: Optional[BestEpoch] = None) -> None:
    t0 = time.perf_counter()
    if best is not None:  # first, so the checkpoint's best epoch is always on disk
        best.write(net, run_dir)
    metrics = run_dir / METRICS
    pos.metrics_bytes = metrics.stat().st_size if metrics.exists() else 0
    pos.checkpoints += 1
    # The file records the time of the writes before it; this one's is added once it is written.
    net.save(run_dir / CHECKPOINT, extra={"position": pos.__dict__})
    pos.checkpoint_seconds += time.perf_counter() - t0


def _rewind_metrics(run_dir: Path, pos: Position) -> None:
    """Drop what a killed run wrote after its checkpoint (records a resume writes again, and a torn
    last line), so metrics.jsonl reads as one run that never stopped."""
    metrics = run_dir / METRICS
    if pos.metrics_bytes is None:  # a checkpoint from before positions recorded it: keep everything
        return
    if metrics.is_symlink() or (metrics.exists() and metrics.stat().st_size > pos.metrics_bytes):
        truncate_file(metrics, pos.metrics_bytes, "run folder")  # refuses a link, whatever its size


RUN_FILES = (CONFIG, METRICS, CHECKPOINT, MODEL, PLOT, BEST)


def lock_run_dir(run_dir: Path) -> RunLock:
    """The lock of an existing run folder, for a process about to write into it (run_lock); its
    run files must not be symbolic links."""
    return lock_run(run_dir, refuse=RUN_FILES)


def _run_files_in(run_dir: Path) -> list[str]:
    """The run's files in `run_dir` (the lock file is not one: it outlives every run); ValueError
    when the folder holds anything else."""
    present = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK)
    ours = [name for name in present if name in RUN_FILES or name.startswith(tuple(f".{f}." for f in RUN_FILES))]
    if present and len(ours) < len(present):
        raise ValueError(f"--out {run_dir} is a folder that holds other files ({', '.join(present[:3])}...); "
                         "a run folder must be new or empty")
    return ours


def create_run_dir(run_dir: Path, *, overwrite: bool = False) -> RunLock:
    """Make a fresh run folder and return its lock, held (run_lock): keep it while the run writes.
    An existing run is never reused silently: it is refused (resume it with --resume) unless
    `overwrite`, which deletes its run files and nothing else, and only once the lock is held (a
    run in use is refused); a non-empty folder that is not a run is refused either way."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"--out {run_dir} is a file, not a folder")
    if run_dir.is_dir():
        _run_files_in(run_dir)  # before the lock file is made: a user's folder is left as it was
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = lock_run(run_dir)
    try:
        ours = _run_files_in(run_dir)
        if ours and not overwrite:
            raise ValueError(f"{run_dir} already holds a run; continue it with `slide train --resume {run_dir}`, "
                             "or pass --overwrite to start it afresh (deletes its checkpoint, model and metrics)")
        for name in ours:
            (run_dir / name).unlink()  # a link goes, its target stays
    except BaseException:
        lock.release()
        raise
    return lock


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


def append_metrics(run_dir: Path, record: dict) -> None:
    with append_text(run_dir / METRICS, "run folder") as f:  # one line per record: a kill costs a torn last line
        f.write(json.dumps(record) + "\n")
        f.flush()


def read_metrics(run_dir: Path) -> list[dict]:
    """The records of metrics.jsonl that match their schema (file_schemas.METRICS_RECORD); any
    other line is skipped with a warning naming it, since one bad line must not cost the rest."""
    path = run_dir / METRICS
    if not is_regular_or_absent(path, "metrics log"):
        return []
    out = []
    for number, record in read_json_lines(path, "metrics log"):
        if record is None:
            continue  # not JSON: read_json_lines has said so (or it is a torn last line)
        try:
            out.append(check(record, METRICS_RECORD, f"{path}:{number}"))
        except ValueError as e:
            log.warning("%s; skipped", e)
    return out


def _subsample(split: Split, n: Optional[int], seed: int) -> Split:
    if n is None or len(split) <= n:
        return split
    rows = np.sort(np.random.default_rng(seed).choice(len(split), n, replace=False))
    return Split(split.X[rows], split.Y[rows])


def run(net: Network, stream: TrainingSource, test: Split, run_dir: Path, s: RunSettings, pos: Optional[Position] = None,
        title: str = "", validation: Optional[Split] = None, memory: Optional[Split] = None) -> dict:
    """Train until `s.epochs` epochs are done; returns the final test report. With `validation`,
    every epoch is scored on it, the best epoch's parameters are kept in best.npz, training stops
    after `s.early_stopping` epochs without improvement, and the final model is the best epoch's
    (so it is never worse on validation than any epoch of the run). Ctrl-C at any moment
    (training, evaluating, plotting, checkpointing) writes a checkpoint at the last consistent
    position and raises TrainingInterrupted. Divergence raises TrainingDiverged, or with
    ``s.on_divergence == "backoff"`` restarts from the last good checkpoint at a lower rate.
    With `memory` and ``net.neighbours`` > 0, the final model remembers those training points and
    fuses their labels' votes into its predictions, with the weight that is best on `validation`."""
    if not 0.0 < s.backoff_factor < 1.0:
        raise ValueError(f"backoff_factor must be in (0, 1), got {s.backoff_factor}")
    s.check()
    load_matplotlib()
    pos = pos or Position()
    for tmp in remove_stale_temporaries(run_dir):
        log.info("removed %s, left by a run that was killed while writing", tmp.name)
    _rewind_metrics(run_dir, pos)
    backoffs = 0
    best = BestEpoch()
    while True:
        try:
            return _run(net, stream, test, run_dir, s, pos, title, validation, memory, best)
        except TrainingInterrupted:
            raise
        except KeyboardInterrupt:
            save_checkpoint(net, run_dir, pos, best)
            raise TrainingInterrupted(0, {}) from None
        except TrainingDiverged as e:
            kept = _checkpoint_position(run_dir)
            where = f"{kept.samples:,} samples, epoch {kept.epoch + 1}" if kept else None
            if s.on_divergence == "stop" or backoffs >= s.max_backoffs:
                why = "" if s.on_divergence == "stop" else f" after {backoffs} learning-rate back-offs"
                saved = (f"the last good checkpoint ({where}) is kept in {run_dir / CHECKPOINT}" if kept
                         else "no checkpoint had been written yet")
                raise TrainingDiverged(f"{e}{why}; {saved}", e.rows_done) from None
            backoffs += 1
            net, pos = _last_good(net, run_dir)
            best = BestEpoch()  # what it kept came after the checkpoint; best.npz is the checkpoint's
            net.learning_rate *= s.backoff_factor
            append_metrics(run_dir, {"kind": "backoff", "epoch": pos.epoch, "samples": pos.samples,
                                      "wall_seconds": round(pos.wall_seconds, 3), "reason": str(e),
                                      "learning_rate": net.learning_rate})
            log.warning("%s; restarting from %s with learning rate %g", e,
                        f"the last good checkpoint ({where})" if kept else "the initial weights", net.learning_rate)


def _checkpoint_position(run_dir: Path) -> Optional[Position]:
    path = run_dir / CHECKPOINT
    return _saved_position(read_header(path), path) if path.exists() else None


def _last_good(net: Network, run_dir: Path) -> tuple[Network, Position]:
    """The newest checkpoint, or (without one) the run's initial state, which its seed reproduces."""
    if (run_dir / CHECKPOINT).exists():
        return load_checkpoint(run_dir, threads=net.threads)
    return Network.from_config(net.get_config()), Position()


def _run(net: Network, stream: TrainingSource, test: Split, run_dir: Path, s: RunSettings, pos: Position, title: str,
         validation: Optional[Split], memory: Optional[Split], best: BestEpoch) -> dict:
    eval_split = _subsample(test, s.eval_samples, seed=1)
    # Epochs are judged on the same held-out points every time, at most eval_samples of them, so
    # judging costs what a test evaluation does however many points the split held out.
    if validation is not None:
        validation = _subsample(validation, s.eval_samples, seed=3)
    last_checkpoint = time.perf_counter()
    # Whole batches, so that where pieces and segments end never changes the batches trained.
    piece = max(1, min(s.eval_every, s.batch_size * 50) // s.batch_size) * s.batch_size
    total_steps = -(-stream.samples_per_epoch // s.batch_size) * s.epochs
    tracker = None
    if validation is not None:
        tracker = BestTracker(**{**(pos.best or {}), "monitor": s.monitor, "patience": s.early_stopping})

    # A share of the training time at every size, so a run of seconds is not mostly evaluation; the
    # first evaluation always fits (nothing is spent yet) and the final one always runs.
    def within_budget() -> bool:
        return s.eval_budget is None or pos.eval_seconds <= s.eval_budget * pos.wall_seconds

    def evaluate(kind: str, split: Split, extra: Optional[dict] = None, seconds: float = 0.0) -> dict:
        t0 = time.perf_counter()
        report = net.evaluate(split.X, split.Y)
        pos.evaluations += 1
        pos.eval_seconds += time.perf_counter() - t0 + seconds
        record = {"kind": kind, "epoch": pos.epoch + (kind == "periodic"), "samples": pos.samples,
                  "wall_seconds": round(pos.wall_seconds, 3),
                  "train_loss": pos.loss_since_eval / pos.labelled_since_eval if pos.labelled_since_eval else None,
                  "test_points": len(split), **report, **(extra or {})}
        append_metrics(run_dir, record)
        pos.since_eval = pos.labelled_since_eval = 0
        pos.loss_since_eval = 0.0
        if kind != "periodic":  # redrawing costs more than scoring a small problem; once an epoch is enough
            t0 = time.perf_counter()
            plot_progress(read_metrics(run_dir), run_dir / PLOT, title)
            pos.eval_seconds += time.perf_counter() - t0
        return record

    def validate() -> dict:
        """Score the epoch just finished on the validation split; keep its parameters if best."""
        report = net.evaluate(validation.X, validation.Y)
        if s.monitor == "loss":
            report["loss"] = net.loss(validation.X, validation.Y)
        improved = tracker.update(report, pos.epoch)
        if improved:
            best.keep(net)
        pos.best = tracker.state()
        return {**{f"val_{k}": v for k, v in report.items()}, "val_points": len(validation), "best": improved}

    while pos.epoch < s.epochs and not pos.stopped_early:
        bar = progress_bar(stream.samples_per_epoch, f"epoch {pos.epoch + 1}/{s.epochs}", s.progress)
        try:
            for index, (data, order) in enumerate(stream.segments(pos.epoch, pos.segment), start=pos.segment):
                if bar is not None and pos.row:
                    bar.update(pos.row)
                while pos.row < len(order):
                    rows = order[pos.row:pos.row + piece]
                    t0 = time.perf_counter()
                    try:
                        first = pos.samples // s.batch_size
                        lr = lambda b: net.learning_rate * lr_multiplier(  # noqa: E731
                            net.lr_schedule, first + b, total_steps, net.lr_warmup)
                        totals = net.train_rows(data, rows, batch_size=s.batch_size, lr=lr, bar=bar)
                        done = len(rows)
                    except TrainingInterrupted as stop:
                        totals, done = stop.totals, stop.rows_done
                        _advance(pos, done, totals, time.perf_counter() - t0)
                        save_checkpoint(net, run_dir, pos, best)
                        raise
                    _advance(pos, done, totals, time.perf_counter() - t0)
                    if pos.since_eval >= s.eval_every and within_budget():
                        r = evaluate("periodic", eval_split)
                        log.info("after %s samples: P@1 %.4f", f"{pos.samples:,}", r["P@1"])
                    if time.perf_counter() - last_checkpoint >= s.checkpoint_every:
                        save_checkpoint(net, run_dir, pos, best)
                        last_checkpoint = time.perf_counter()
                pos.segment, pos.row = index + 1, 0
        finally:
            if bar is not None:
                bar.close()
        pos.epoch, pos.segment, pos.row = pos.epoch + 1, 0, 0
        t0 = time.perf_counter()
        validation_report = validate() if tracker else None
        validation_seconds = time.perf_counter() - t0
        line = f"epoch {pos.epoch}: {pos.samples:,} samples in {pos.wall_seconds:,.1f}s " \
               f"({pos.samples / max(pos.wall_seconds, 1e-9):,.0f} samples/s)"
        if within_budget():
            record = evaluate("epoch", eval_split, validation_report, validation_seconds)
            line += f", test P@1 {record['P@1']:.4f} on {len(eval_split):,} points"
        else:  # the epoch is recorded; its test score waits for the budget
            pos.eval_seconds += validation_seconds
            record = {"kind": "epoch", "epoch": pos.epoch, "samples": pos.samples,
                      "wall_seconds": round(pos.wall_seconds, 3), **(validation_report or {})}
            append_metrics(run_dir, record)
            line += (f", no test score (evaluation has had {pos.eval_seconds:,.0f}s, over its budget of "
                     f"{s.eval_budget:.0%} of training time)")
        if tracker:
            line += f", validation {s.monitor} {record['val_' + s.monitor]:.4f}" + (" (best)" if record["best"] else "")
        print(line, flush=True)
        if tracker is not None and tracker.should_stop:
            pos.stopped_early = True
            append_metrics(run_dir, {"kind": "early_stop", "epoch": pos.epoch, "samples": pos.samples,
                                      "best_epoch": tracker.best_at, "best": tracker.best})
            print(f"no better validation {s.monitor} for {s.early_stopping} epochs: stopping; the best was "
                  f"epoch {tracker.best_at}", flush=True)
        last_epoch = pos.epoch >= s.epochs or pos.stopped_early
        if last_epoch or time.perf_counter() - last_checkpoint >= s.checkpoint_every:
            save_checkpoint(net, run_dir, pos, best)
            last_checkpoint = time.perf_counter()
    extra = None
    if tracker is not None and tracker.best_at is not None and best.exists(run_dir):
        extra = {"best_epoch": tracker.best_at}
        if tracker.best_at != pos.epoch:  # the final model is the best epoch's
            best.restore_into(net, run_dir)
    t0 = time.perf_counter()
    if memory is not None and net.neighbours:
        net.remember(memory.X, memory.Y)
        if validation is not None and s.monitor != "loss":
            net.tune_neighbour_weight(validation.X, validation.Y, monitor=s.monitor)
        extra = {**(extra or {}), "neighbour_weight": net.neighbour_weight}
    final = evaluate("final", _subsample(test, s.final_eval_samples, seed=2), {**(extra or {}), **_costs(pos)})
    net.save(run_dir / MODEL, include_optimizer=s.final_model_optimizer)
    final["model_seconds"] = time.perf_counter() - t0  # the final evaluation and model.npz
    return final


def _costs(pos: Position) -> dict:
    """What the run spent, in training and outside it (before the final evaluation)."""
    return {"train_seconds": round(pos.wall_seconds, 3), "eval_seconds": round(pos.eval_seconds, 3),
            "evaluations": pos.evaluations, "checkpoint_seconds": round(pos.checkpoint_seconds, 3),
            "checkpoints": pos.checkpoints}


def _advance(pos: Position, rows: int, totals: dict, seconds: float) -> None:
    pos.row += rows
    pos.samples += rows
    pos.since_eval += rows
    pos.wall_seconds += seconds
    pos.loss_since_eval += totals["loss"]
    pos.labelled_since_eval += totals["samples"]


def write_config(run_dir: Path, config: dict) -> None:
    payload = (json.dumps(config, indent=2) + "\n").encode()
    atomic_write(run_dir / CONFIG, lambda f: f.write(payload))


def read_config(run_dir: Path) -> dict:
    """The run's settings, checked against their declared schema (file_schemas.RUN_CONFIG); a
    FIFO or a device in its place is refused before it is opened."""
    path = run_dir / CONFIG
    if not is_regular_or_absent(path, "run configuration"):
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {CONFIG})")
    return check_run_config(read_json(path, "run configuration"), str(path))
