"""A training run as the CLI drives it: the shared training loop (`slide.training.loop`) with a
run folder around it: periodic evaluation on a shuffled test sample within a budget, atomic
checkpoints, validation with the best epoch kept in best.npz, exact resume after Ctrl-C or a kill,
and divergence (NaN/inf) either stopping the run or backing off the learning rate from the last
good checkpoint, which is never overwritten by a diverged model."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..atomic_files import remove_stale_temporaries
from ..best_epoch import BestEpoch
from ..datasets.stream import Stream, training_points
from ..datasets.synthetic import Split
from ..epoch_average import NO_AVERAGING, first_averaged_epoch
from ..model.errors import TrainingDiverged, TrainingInterrupted
from ..network import Network
from ..plots import plot_progress
from ..progress import duration
from ..prediction.methods import TREE_RESCORES_BELOW
from ..prediction.reranker_training import list_scan, training_lists
from ..training.loop import TrainingLoop
from ..training.position import Position
from ..training.sources import TrainingSource
from ..training.validation import Validation
from . import checkpoint
from .average_file import read_average
from .folder import CHECKPOINT, MODEL, PLOT, append_metrics, read_metrics, rewind_metrics
from .settings import RunSettings

log = logging.getLogger("slide")
# progress.png is drawn once a run has trained this long (at epoch ends, and when it ends): importing
# matplotlib and drawing took 1.3-1.6 s, more than a small set's whole training (Bibtex: 0.8 s).
# `slide info RUN --plot` draws it for any run.
PLOT_AFTER_SECONDS = 30.0


def run(net: Network, stream: TrainingSource, test: Split, run_dir: Path, s: RunSettings, pos: Optional[Position] = None,
        title: str = "", validation: Optional[Split] = None, memory: "Split | Stream | None" = None) -> dict:
    """Train until `s.epochs` epochs are done; returns the final test report. With `validation`,
    every epoch is scored on it, the best epoch's parameters are kept in best.npz, training stops
    after `s.early_stopping` epochs without improvement, and the final model is the best epoch's
    (so it is never worse on validation than any epoch of the run). Ctrl-C at any moment
    (training, evaluating, plotting, checkpointing) writes a checkpoint at the last consistent
    position and raises TrainingInterrupted. Divergence raises TrainingDiverged, or with
    ``s.on_divergence == "backoff"`` restarts from the last good checkpoint at a lower rate.
    With `memory` (the training points) and ``net.neighbours`` > 0, the final model remembers them
    and fuses their labels' votes into its predictions; with ``net.rerank`` > 0 they train its
    shortlist re-ranker; each with the weight that is best on `validation`. A Stream as `memory`
    (a streamed run) trains the re-ranker shard by shard; the vote needs points in memory."""
    if not 0.0 < s.backoff_factor < 1.0:
        raise ValueError(f"backoff_factor must be in (0, 1), got {s.backoff_factor}")
    s.check()
    pos = pos or Position()
    for tmp in remove_stale_temporaries(run_dir):
        log.info("removed %s, left by a run that was killed while writing", tmp.name)
    rewind_metrics(run_dir, pos)
    backoffs = 0
    best = BestEpoch()
    while True:
        loop: Optional[RunLoop] = None
        try:
            loop = RunLoop(net, stream, test, run_dir, s, pos, title, validation, best)
            return loop.train(memory)
        except TrainingInterrupted:
            raise
        except KeyboardInterrupt:
            checkpoint.save_checkpoint(net, run_dir, pos, best, None if loop is None else loop.average)
            raise TrainingInterrupted(0, {}) from None
        except TrainingDiverged as e:
            backoffs += 1
            net, pos = _back_off(e, net, run_dir, s, backoffs)
            best = BestEpoch()  # what it kept came after the checkpoint; best.npz is the checkpoint's


def _back_off(e: TrainingDiverged, net: Network, run_dir: Path, s: RunSettings, backoffs: int
              ) -> tuple[Network, Position]:
    """The last good network and position at a lower learning rate, or TrainingDiverged when the
    run stops on divergence or has backed off `s.max_backoffs` times already."""
    kept = checkpoint.checkpoint_position(run_dir)
    where = f"{kept.samples:,} samples, epoch {kept.epoch + 1}" if kept else None
    if s.on_divergence == "stop" or backoffs > s.max_backoffs:
        why = "" if s.on_divergence == "stop" else f" after {backoffs - 1} learning-rate back-offs"
        saved = (f"the last good checkpoint ({where}) is kept in {run_dir / CHECKPOINT}" if kept
                 else "no checkpoint had been written yet")
        raise TrainingDiverged(f"{e}{why}; {saved}", e.rows_done) from None
    net, pos = checkpoint.last_good(net, run_dir)
    net.learning_rate *= s.backoff_factor
    append_metrics(run_dir, {"kind": "backoff", "epoch": pos.epoch, "samples": pos.samples,
                              "wall_seconds": round(pos.wall_seconds, 3), "reason": str(e),
                              "learning_rate": net.learning_rate})
    log.warning("%s; restarting from %s with learning rate %g", e,
                f"the last good checkpoint ({where})" if kept else "the initial weights", net.learning_rate)
    return net, pos


def _subsample(split: Split, n: Optional[int], seed: int) -> Split:
    if n is None or len(split) <= n:
        return split
    rows = np.sort(np.random.default_rng(seed).choice(len(split), n, replace=False))
    return Split(split.X[rows], split.Y[rows])


class RunLoop:
    """One attempt at a run, from `pos` to its final model (a back-off starts another)."""

    def __init__(self, net: Network, stream: TrainingSource, test: Split, run_dir: Path, s: RunSettings,
                 pos: Position, title: str, validation: Optional[Split], best: BestEpoch) -> None:
        self.net, self.stream, self.test, self.run_dir, self.s, self.pos = net, stream, test, run_dir, s, pos
        self.title, self.best = title, best
        self.eval_split = _subsample(test, s.eval_samples, seed=1)
        # Epochs are judged on the same held-out points every time, at most eval_samples of them, so
        # judging costs what a test evaluation does however many points the split held out.
        self.validation_split = None if validation is None else _subsample(validation, s.eval_samples, seed=3)
        self.average = None if validation is None or s.averaging == NO_AVERAGING else \
            read_average(net, run_dir, pos.average, first_averaged_epoch(s.epochs))
        self.validation = None if validation is None else Validation(
            net, self.validation_split.X, self.validation_split.Y, monitor=s.monitor, patience=s.early_stopping,
            keep=best.keep, state=pos.best, average=self.average)
        self.last_checkpoint = time.perf_counter()
        self._eval_seconds_a_point: Optional[float] = None  # what the last test evaluation cost a point

    def train(self, memory: "Split | Stream | None") -> dict:
        s, pos = self.s, self.pos
        # Whole batches, so that where pieces and segments end never changes the batches trained.
        piece = max(1, min(s.eval_every, s.batch_size * 50) // s.batch_size) * s.batch_size
        loop = TrainingLoop(self.net, self.stream, epochs=s.epochs, batch_size=s.batch_size, piece_rows=piece,
                            total_steps=-(-self.stream.samples_per_epoch // s.batch_size) * s.epochs,
                            progress=s.progress)
        try:
            for _ in loop.run(pos, self._after_piece):
                self._end_epoch()
        except TrainingInterrupted:
            self._checkpoint()
            raise
        return self._finish(memory)

    def _within_budget(self, spent_now: float = 0.0) -> bool:
        """Whether a test evaluation fits: evaluations during training take at most their share of
        the training time so far, at every size, the one about to run included (the final one
        always runs). `spent_now`: evaluation time not counted yet (this epoch's validation).

        The next one is expected to cost what the last one did, and before any has run, what
        training as many samples has cost: counting only what was spent let the first evaluation
        through at any cost, and on Medical (333 training points, 645 test points) that one took
        20% of a 12 ms training."""
        if self.s.eval_budget is None:
            return True
        pos = self.pos
        a_point = self._eval_seconds_a_point
        if a_point is None:
            a_point = pos.wall_seconds / max(1, pos.samples)
        expected = a_point * len(self.eval_split)
        return pos.eval_seconds + spent_now + expected <= self.s.eval_budget * pos.wall_seconds

    def _checkpoint(self) -> None:
        checkpoint.save_checkpoint(self.net, self.run_dir, self.pos, self.best, self.average)
        self.last_checkpoint = time.perf_counter()

    def _after_piece(self, pos: Position) -> None:
        if pos.since_eval >= self.s.eval_every and self._within_budget():
            r = self._evaluate("periodic", self.eval_split)
            log.info("after %s samples: P@1 %.4f", f"{pos.samples:,}", r["P@1"])
        if time.perf_counter() - self.last_checkpoint >= self.s.checkpoint_every:
            self._checkpoint()

    def _evaluate(self, kind: str, split: Split, extra: Optional[dict] = None, seconds: float = 0.0) -> dict:
        pos, t0 = self.pos, time.perf_counter()
        report = self.net.evaluate(split.X, split.Y)
        took = time.perf_counter() - t0
        if split is self.eval_split:
            self._eval_seconds_a_point = took / max(1, len(split))
        pos.evaluations += 1
        pos.eval_seconds += took + seconds
        record = {"kind": kind, "epoch": pos.epoch + (kind == "periodic"), "samples": pos.samples,
                  "wall_seconds": round(pos.wall_seconds, 3),
                  "train_loss": pos.loss_since_eval / pos.labelled_since_eval if pos.labelled_since_eval else None,
                  "test_points": len(split), **report, **(extra or {})}
        append_metrics(self.run_dir, record)
        pos.since_eval = pos.labelled_since_eval = 0
        pos.loss_since_eval = 0.0
        if kind == "epoch" and pos.wall_seconds >= PLOT_AFTER_SECONDS:  # redrawn once an epoch at most
            t0 = time.perf_counter()
            self._plot()
            pos.eval_seconds += time.perf_counter() - t0
        return record

    def _plot(self) -> None:
        plot_progress(read_metrics(self.run_dir), self.run_dir / PLOT, self.title)

    def _validate(self) -> Optional[dict]:
        """Score the epoch just finished on the validation split; keep its parameters if best."""
        if self.validation is None:
            return None
        report, improved = self.validation.judge(self.pos.epoch)
        self.pos.best = self.validation.tracker.state()
        return {**{f"val_{k}": v for k, v in report.items()}, "val_points": len(self.validation_split),
                "best": improved}

    def _end_epoch(self) -> None:
        s, pos = self.s, self.pos
        t0 = time.perf_counter()
        validation_report = self._validate()
        validation_seconds = time.perf_counter() - t0
        line = f"epoch {pos.epoch}: {pos.samples:,} samples in {duration(pos.wall_seconds)} " \
               f"({pos.samples / max(pos.wall_seconds, 1e-9):,.0f} samples/s)"
        if self._within_budget(validation_seconds):
            record = self._evaluate("epoch", self.eval_split, validation_report, validation_seconds)
            line += f", test P@1 {record['P@1']:.4f} on {len(self.eval_split):,} points"
        else:  # the epoch is recorded; its test score waits for the budget
            pos.eval_seconds += validation_seconds
            record = {"kind": "epoch", "epoch": pos.epoch, "samples": pos.samples,
                      "wall_seconds": round(pos.wall_seconds, 3), **(validation_report or {})}
            append_metrics(self.run_dir, record)
            line += (f", no test score (evaluation has had {duration(pos.eval_seconds)}, and one of "
                     f"{len(self.eval_split):,} points would take it over its budget of {s.eval_budget:.0%} of "
                     "training time)")
        if self.validation is not None:
            line += f", validation {s.monitor} {record['val_' + s.monitor]:.4f}"
            if record.get("val_averaged_from") is not None:
                line += f" by the mean of epochs {record['val_averaged_from']} to {pos.epoch}"
            line += " (best)" if record["best"] else ""
        print(line, flush=True)
        self._stop_early()
        ended = pos.epoch >= s.epochs or pos.stopped_early
        interval = min(s.checkpoint_every, s.end_checkpoint_after) if ended else s.checkpoint_every
        if time.perf_counter() - self.last_checkpoint >= interval:
            self._checkpoint()

    def _stop_early(self) -> None:
        if self.validation is None or not self.validation.should_stop:
            return
        pos, tracker = self.pos, self.validation.tracker
        pos.stopped_early = True
        append_metrics(self.run_dir, {"kind": "early_stop", "epoch": pos.epoch, "samples": pos.samples,
                                      "best_epoch": tracker.best_at, "best": tracker.best})
        print(f"no better validation {self.s.monitor} for {self.s.early_stopping} epochs: stopping; the best was "
              f"epoch {tracker.best_at}", flush=True)

    def _fit_fusion(self, memory: "Split | Stream", extra: dict) -> None:
        """The vote's memory and the re-ranker from the training points (a Stream trains the
        re-ranker only), fused at the weights that do best on validation."""
        net, val = self.net, self.validation_split
        announced = _after_training(net, memory)
        if announced:
            print(announced, flush=True)
        net.fit_fusion(*training_points(memory), None if val is None else (val.X, val.Y), progress=self.s.progress)
        if net.neighbours and net.memory is not None:
            extra["neighbour_weight"] = net.neighbour_weight
        if net.rerank:
            extra["rerank_weight"] = net.rerank_weight
        if net.tree is not None:
            extra["tree_weight"] = net.tree_weight
        if net.reranker is not None and net.reranker.hinge_c is not None:
            extra["rerank_c"] = net.reranker.hinge_c
        if net.weight_choice is not None:
            extra["fusion_weights_kept"] = "learned" if net.weight_choice.learned else "grid"

    def _finish(self, memory: "Split | Stream | None") -> dict:
        """The final model (the best epoch's, with the vote's memory), its test report and model.npz."""
        net, s, extra = self.net, self.s, {}
        tracker = None if self.validation is None else self.validation.tracker
        if tracker is not None and tracker.best_at is not None and self.best.exists(self.run_dir):
            extra["best_epoch"] = tracker.best_at
            if tracker.best_at != self.pos.epoch or self.validation.best_is_average:  # the final model is the best
                self.best.restore_into(net, self.run_dir)
            if self.validation.best_is_average:
                extra["averaged_from"] = self.average.first
        t0 = time.perf_counter()
        if memory is not None and (net.neighbours or net.rerank or net.label_tree):
            self._fit_fusion(memory, extra)
        extra["fusion_seconds"] = round(time.perf_counter() - t0, 3)
        t1 = time.perf_counter()
        final = self._evaluate("final", _subsample(self.test, s.final_eval_samples, seed=2), {**extra, **_costs(self.pos)})
        net.save(self.run_dir / MODEL, include_optimizer=s.final_model_optimizer)
        final["model_seconds"] = time.perf_counter() - t1  # the final evaluation and model.npz
        if self.pos.wall_seconds >= PLOT_AFTER_SECONDS:
            self._plot()
        return final


def _after_training(net: Network, memory: "Split | Stream") -> Optional[str]:
    """The line that says what happens between the last epoch and the test: at Amazon-670K's shape
    the re-ranker's training alone takes minutes (benches/reranker_scale.py)."""
    streamed, steps = isinstance(memory, Stream), []
    if net.neighbours and not streamed:
        steps.append("keeping the training points for the vote")
    if net.rerank:
        solver, listed = training_lists(net, in_memory=not streamed, shards=len(memory.folder) if streamed else 1)
        found = (f"a scan of its {net.output_dim:,} outputs with BF16 products where the CPU has AVX-512 BF16"
                 if list_scan(net) == "bf16" else f"an exact scan of its {net.output_dim:,} outputs")
        steps.append(f"training the re-ranker ({solver} on each point's {listed} best labels by the network, "
                     f"found by {found})")
    if net.label_tree and net.comm is None and (not streamed or memory.holds_every_point):
        trees = "a label tree" if net.label_trees == 1 else f"{net.label_trees} label trees, averaged"
        steps.append(f"training {trees} (at most {net.label_tree} labels a leaf; where the labels have fewer "
                     f"than {TREE_RESCORES_BELOW:g} points each, {'its' if net.label_trees == 1 else 'their'} "
                     "classifiers re-score in the re-ranker's place)")
    return "after the last epoch: " + "; ".join(steps) if steps else None


def _costs(pos: Position) -> dict:
    """What the run spent, in training and outside it (before the final evaluation)."""
    return {"train_seconds": round(pos.wall_seconds, 3), "eval_seconds": round(pos.eval_seconds, 3),
            "evaluations": pos.evaluations, "checkpoint_seconds": round(pos.checkpoint_seconds, 3),
            "checkpoints": pos.checkpoints}

