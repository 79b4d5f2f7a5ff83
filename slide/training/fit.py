"""`Network.fit`: epochs over data in memory or streamed, with validation, early stopping, the
best epoch restored, callbacks, and at the end (with `neighbours`) the vote's memory, (with `rerank`)
the shortlist re-ranker, and the weights that fuse them, picked on validation data."""

from __future__ import annotations

import logging
import time
from typing import Any, Optional, Sequence

from ..callbacks import CallbackList
from ..datasets.stream import Stream, training_points
from ..early_stopping import check_monitor, restore, snapshot
from ..epoch_average import AVERAGING, NO_AVERAGING, EpochAverage, first_averaged_epoch
from ..model.checks import check_int
from ..model.data import hold_out, validation_pair
from ..model.errors import TrainingInterrupted
from .history import History
from .loop import TrainingLoop
from .position import Position
from .sources import TrainingSource, in_memory_source, pieces_source
from .validation import Validation

log = logging.getLogger("slide")


def fit(net: Any, X: Any, Y: Any = None, *, epochs: int = 1, batch_size: int = 128,
        validation_data: Optional[tuple] = None, validation_split: float = 0.0, validation_mode: str = "dense",
        early_stopping: Optional[int] = None, monitor: str = "P@1", restore_best: bool = True,
        averaging: str = NO_AVERAGING, shuffle: bool = True, progress: bool = True, callback=None,
        callbacks: Optional[Sequence[Any]] = None) -> History:
    """Train `net` (see `Network.fit`, which documents every argument)."""
    _check_arguments(epochs, batch_size, validation_mode, callback, validation_split, validation_data,
                     early_stopping, averaging)
    hooks = CallbackList(callbacks)
    source, data, val = _sources(net, X, Y, epochs, batch_size, validation_data, validation_split, shuffle)
    if val is None and (early_stopping is not None or monitor != "P@1" or averaging != NO_AVERAGING):
        raise ValueError("early_stopping, monitor and averaging need validation_data or validation_split")
    if averaging != NO_AVERAGING and not restore_best:
        raise ValueError("averaging='swa' needs restore_best=True: the run ends with the mean when it is the best")
    check_monitor(monitor, net._ranks(None))
    n = source.samples_per_epoch
    if n is not None and net.ranks.total(n) == 0:
        raise ValueError("X has no rows to train on")
    rank_batch, rank_steps = net.ranks.rank_batches(n, batch_size)
    steps_per_epoch = rank_steps if rank_steps is not None else (-(-n // batch_size) if n is not None else None)
    kept: dict[str, Any] = {}
    validation = None if val is None else Validation(
        net, *val, monitor=monitor, patience=early_stopping, mode=validation_mode,
        keep=(lambda network: kept.update(parameters=snapshot(network, into=kept.get("parameters"))))
        if restore_best else None,
        average=EpochAverage(first_averaged_epoch(epochs)) if averaging != NO_AVERAGING else None)
    on_batch = (lambda step, logs: hooks.call("on_batch_end", net, step, logs)) if hooks.wants_batches() else None
    loop = TrainingLoop(net, source, epochs=epochs, batch_size=rank_batch, segment_steps=rank_steps,
                        total_steps=steps_per_epoch * epochs if steps_per_epoch is not None else None,
                        progress=progress and net.ranks.speaks, on_batch=on_batch)
    history = History()
    net.interrupted = False
    net.memory = net.reranker = None  # epochs are judged by the network alone; these come from this call's data
    hooks.call("on_train_begin", net)
    _train_epochs(net, loop, validation, history, callback, hooks)
    if validation is not None:
        history.best_epoch, history.best_score = validation.tracker.best_at, validation.tracker.best
        if validation.best_is_average:
            history.averaged_from = validation.average.first
    if kept and (validation.tracker.best_at != len(history.epochs) or validation.best_is_average):
        restore(net, kept["parameters"])
        history.restored_best = True
    _remember(net, X if data is None else data, val, validation_mode, history, progress)
    hooks.call("on_train_end", net, history)
    return history


def _check_arguments(epochs: Any, batch_size: Any, validation_mode: Any, callback: Any, validation_split: Any,
                     validation_data: Any, early_stopping: Any, averaging: Any) -> None:
    check_int("epochs", epochs, 1)
    check_int("batch_size", batch_size, 1)
    if validation_mode not in ("dense", "sparse"):
        raise ValueError(f"validation_mode must be 'dense' or 'sparse', got {validation_mode!r}")
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable, got {callback!r}")
    if isinstance(validation_split, bool) or not isinstance(validation_split, (int, float)) \
            or not 0.0 <= validation_split < 1.0:
        raise ValueError(f"validation_split must be a number in [0, 1), got {validation_split!r}")
    if validation_split and validation_data is not None:
        raise ValueError("give validation_data or validation_split, not both")
    if early_stopping is not None:
        check_int("early_stopping (epochs of patience)", early_stopping, 1)
    if averaging not in AVERAGING:
        raise ValueError(f"averaging must be one of {', '.join(map(repr, AVERAGING))}, got {averaging!r}")


def _sources(net: Any, X: Any, Y: Any, epochs: int, batch_size: int, validation_data: Any,
             validation_split: float, shuffle: bool) -> tuple[TrainingSource, Any, Optional[tuple]]:
    """(what the loop trains on, the training data in memory or None, the validation pair or None)."""
    data = None
    if Y is None:  # data streamed in pieces
        if net.comm is not None:
            raise ValueError("under MPI, fit takes each rank's own rows in memory as X, Y (slide train reads each "
                             "rank's byte range of the training file); streams are for a single process")
        source = pieces_source(net, X, epochs, batch_size)
        if validation_split:
            raise ValueError("validation_split needs the training data in memory; with a stream, pass "
                             "validation_data (or hold rows out with Stream.hold_out)")
        if source.samples_per_epoch is None and net.lr_schedule_steps is None and \
                (net.lr_schedule != "constant" or net.lr_warmup):
            raise ValueError(f"lr_schedule={net.lr_schedule!r} (or lr_warmup) over an iterable of pieces needs "
                             "lr_schedule_steps, since the steps of an epoch are not known in advance; or pass "
                             "a slide.datasets.Stream")
    else:
        data = net.ranks.on_every_rank(net.prepare, X, Y)
    val = None
    if validation_data is not None:
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
            raise ValueError("validation_data must be a pair (X_val, Y_val)")
        val = net.ranks.on_every_rank(validation_pair, validation_data, net.input_dim, net.output_dim)
    elif validation_split:
        data, val = hold_out(data, validation_split, net.seed)
    if data is not None:
        source = in_memory_source(data, net.seed + net._core.counters()["step"], shuffle)
    return source, data, val


def _train_epochs(net: Any, loop: TrainingLoop, validation: Optional[Validation], history: History, callback,
                  hooks: CallbackList) -> None:
    pos = Position()
    epochs = loop.run(pos)
    while True:
        try:
            if next(epochs, None) is None:
                return
            epoch = pos.epoch
        except TrainingInterrupted:
            net.interrupted = history.interrupted = True
            epoch = pos.epoch + 1
            log.warning("training interrupted by the user during epoch %d; the model is intact", epoch)
        metrics = _epoch_metrics(epoch, loop)
        if validation is not None and not net.interrupted:
            report, _ = validation.judge(epoch)
            metrics.update({f"val_{k}": v for k, v in report.items()})
        history.epochs.append(metrics)
        log.info("epoch %d: %s", epoch, metrics)
        stop = callback is not None and callback(net, metrics) is False
        stop = any(r is False for r in hooks.call("on_epoch_end", net, epoch, metrics)) or stop
        if net.interrupted or stop:
            return
        if validation is not None and validation.should_stop:
            history.stopped_early = True
            log.info("no better validation %s for %d epochs: stopping", validation.monitor,
                     validation.tracker.patience)
            return


def _epoch_metrics(epoch: int, loop: TrainingLoop) -> dict[str, Any]:
    totals, seconds = loop.epoch_totals, loop.epoch_seconds
    counted = max(totals["samples"], 1)
    return {"epoch": epoch, "loss": totals["loss"] / counted, "seconds": seconds,
            "samples_per_second": totals["samples"] / max(seconds, 1e-9),
            "active_per_sample": totals["active"] / counted}


def _remember(net: Any, data: Any, val: Optional[tuple], validation_mode: str,
              history: History, progress: bool = False) -> None:
    """With `neighbours`, the training points become the vote's memory; with `rerank`, they train
    the re-ranker (`data` in memory, or a Stream read shard by shard; under MPI each rank's share,
    and no vote); with `label_tree`, the label tree (in memory or a Stream of one shard, one
    process); the weights that fuse them with the network are picked on validation data."""
    if not (net.neighbours or net.rerank or net.label_tree):
        return
    if not (isinstance(data, Stream) or hasattr(data, "X")):
        log.info("fit on pieces: no nearest-neighbour memory or re-ranker (they need the training points in "
                 "memory or in a slide.datasets.Stream); predictions use the network alone, or call remember() / "
                 "fit_reranker() with the points")
        return
    t0 = time.perf_counter()
    scores = net.fit_fusion(*training_points(data), val, mode=validation_mode,
                            progress=progress and net.ranks.speaks)
    history.fusion_seconds = time.perf_counter() - t0
    if scores is not None and net.neighbours and net.memory is not None:
        # each vote weight's score at the re-ranker's weight the grid picked (learned ones lie off it)
        picked = net.rerank_weight if net.weight_choice is None else net.weight_choice.grid[1]
        chosen = picked if net.reranker is not None else 0.0
        history.neighbour_weight_scores = {w: s for (w, r), s in scores.items() if r == chosen}
