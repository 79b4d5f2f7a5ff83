"""The user-facing network: sparse input -> dense hidden layers -> a huge softmax output that is
either dense (full softmax, the exact reference) or sampled by LSH (SLIDE)."""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp

from . import _core, memory
from .batch_memory import ESTIMATE_BATCH, check_batch_fits
from ._inputs import MAX_DIM, LabelsLike, as_features, as_labels
from .callbacks import CallbackList
from .config import LSHConfig
from .datasets.stream import Stream
from .modes import DEFAULT_MODE, check_mode, mode_of
from .settings import NETWORK, defaults
from .early_stopping import BestTracker, check_monitor, held_out_rows, restore, snapshot
from .metrics import ranking_report
from .neighbours import Fusion, NeighbourMemory, pick_weight
from .progress import progress_bar
from . import word_vectors
from .schedules import Schedule, check_schedule, check_warmup, lr_multiplier

log = logging.getLogger("slide")

_MODE_LSH = LSHConfig()  # a marker: lsh not given, so it comes from the mode
_D = defaults(NETWORK)    # the constructor's defaults, declared in slide.settings
_MAX_SEED = 2**64 - 1  # the engine's seed is a uint64
_DEFAULT_KS = (1, 3, 5)


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _one_call_at_a_time(method):
    """Refuse a call from a second Python thread while one is running: the worker threads' scratch
    is shared across calls, so two at once would corrupt memory. The same thread may re-enter (a
    `fit` callback may call `predict`)."""

    @functools.wraps(method)
    def guarded(self: "Network", *args, **kwargs):
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(f"Network.{method.__name__} was called while another thread runs "
                               f"Network.{self._busy_with} on the same network; a Network runs one call at a "
                               "time: wait for that call, or give each thread its own Network")
        outermost = self._busy_with is None
        if outermost:
            self._busy_with = method.__name__
        try:
            return method(self, *args, **kwargs)
        finally:
            if outermost:
                self._busy_with = None
            self._busy.release()

    return guarded


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during `Network.train_rows`: `rows_done` rows were trained, the model is intact."""

    def __init__(self, rows_done: int, totals: dict) -> None:
        super().__init__(rows_done)
        self.rows_done, self.totals = rows_done, totals


class TrainingDiverged(FloatingPointError):
    """A batch produced a NaN/inf loss or NaN/inf parameters; the network is no longer usable.

    Raised after the batch in which it first happens. `rows_done` rows of the call were trained
    before the bad batch.
    """

    def __init__(self, message: str, rows_done: int = 0) -> None:
        super().__init__(message)
        self.rows_done = rows_done


@dataclass
class TrainingData:
    """Features and labels validated for the engine (float32 CSR, int32 ids, int64 offsets)."""

    X: sp.csr_matrix
    Y: sp.csr_matrix

    def __len__(self) -> int:
        return self.X.shape[0]


@dataclass
class History:
    """What `fit` measured: one dict per epoch (loss, samples/s, validation metrics, ...)."""

    epochs: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    best_epoch: Optional[int] = None       # with validation: the epoch with the best monitored metric
    best_score: Optional[float] = None     # and that metric's value
    stopped_early: bool = False            # early_stopping ended training before `epochs`
    restored_best: bool = False            # the network was set back to best_epoch's parameters
    # with neighbours and validation: each fusion weight's validation score (neighbour_weight is the best's)
    neighbour_weight_scores: Optional[dict[float, float]] = None

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.epochs[i]

    def __len__(self) -> int:
        return len(self.epochs)


class Network(word_vectors.WordVectorLookup):
    """A network for extreme classification trained with LSH-sampled softmax (SLIDE).

    Args:
        input_dim: number of sparse input features.
        output_dim: number of labels (output neurons).
        hidden: sizes of the hidden ReLU layers (one int for one layer); the first is the
            sparse-input embedding.
        mode: how the output layer trains (``slide.MODES``): ``"batch"`` (the default: the batch
            shares one LSH-chosen active set and trains as matrix products), ``"sample"`` (SLIDE:
            an active set per sample) or ``"dense"`` (full softmax). Omit it to take the mode of
            ``lsh`` (or ``"sample"`` when ``hidden_lsh`` samples a hidden layer, which only that
            mode can train).
        lsh: the output layer's LSH settings, when the mode's are not what you want
            (``slide.MODES["batch"].lsh_config(k=4)``); ``None`` trains the full softmax.
        hidden_lsh: optional per-hidden-layer LSH configs (``None`` = dense); the first hidden
            layer cannot be sampled.
        optimizer: ``"adam"`` (lazy: only rows that received gradient are updated), ``"adagrad"``
            or ``"sgd"`` (``slide.optimizers``).
        learning_rate: base learning rate.
        lr_schedule: ``"constant"``, ``"linear"``, ``"cosine"`` or ``f(step, total_steps)``.
        lr_warmup: share of each `fit`'s steps over which the rate rises linearly from near zero
            to the schedule's (0 = none; 0.05 is a common choice for Adam).
        lr_schedule_steps: the optimizer steps the schedule (and warm-up) spans, counted from the
            network's first step across `fit` and `partial_fit` calls and save/load, so training
            in several calls follows one schedule. None: each `fit` call schedules over its own
            steps (and `partial_fit` needs a constant schedule).
        beta1, beta2, eps: Adam's parameters.
        input_norm: ``"none"``, or ``"l2"``: scale each sample's feature values to unit L2 norm
            before the embedding, in training and inference alike (what tree and linear XC methods
            do with tf-idf rows; it keeps long and short documents on one scale).
        input_dropout: while training, drop each nonzero input feature with this probability
            (after normalisation; the kept ones are scaled by 1 / (1 - p)). Regularises the
            sparse embedding, which otherwise memorises small training sets within a few epochs.
        precision: ``"fp32"``, or ``"bf16"``: training reads BF16 copies of the weight rows (half
            the memory traffic; ``vdpbf16ps`` on CPUs with AVX-512 BF16, an exact emulation
            elsewhere) while the optimizer updates fp32 master weights. Prediction with
            ``mode="dense"`` uses the fp32 weights.
        threads: worker threads (HOGWILD); default: the CPUs this process may use. More threads
            than that is allowed (with a warning) but slower, never faster.
        seed: seeds the weights, the hash functions and the per-thread generators; with
            ``threads=1`` training is reproducible bit for bit.
        sparse_exchange: under MPI, how the ranks sum the embedding's sparse gradient:
            ``"allgather"``, ``"allreduce"`` (of the union of the rows) or ``"auto"`` (per batch,
            the one that moves fewer bytes).
        comm: an mpi4py communicator (``MPI.COMM_WORLD``) to train one network over its ranks:
            each rank holds a block of the output layer's rows (its weights, optimizer state and
            LSH tables), the layers below are replicated, and every data argument of `fit`,
            `predict` and `evaluate` is the calling rank's own share of the rows. Every rank makes
            the same calls in the same order. Needs ``mode="batch"`` or ``"dense"``. Install with
            ``pip install "slide[mpi]"``; see the README's "Training on a cluster".
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        hidden: Union[int, Sequence[int]] = tuple(_D["hidden"]),
        *,
        mode: Optional[str] = None,
        lsh: Optional[LSHConfig] = _MODE_LSH,
        hidden_lsh: Optional[Sequence[Optional[LSHConfig]]] = None,
        optimizer: str = _D["optimizer"],
        learning_rate: float = _D["learning_rate"],
        lr_schedule: Schedule = _D["lr_schedule"],
        lr_warmup: float = _D["lr_warmup"],
        lr_schedule_steps: Optional[int] = None,
        beta1: float = _D["beta1"],
        beta2: float = _D["beta2"],
        eps: float = _D["eps"],
        input_norm: str = _D["input_norm"],
        input_dropout: float = _D["input_dropout"],
        precision: str = _D["precision"],
        neighbours: int = _D["neighbours"],
        neighbour_weight: float = _D["neighbour_weight"],
        threads: Optional[int] = None,
        seed: int = 0,
        sparse_exchange: str = _D["sparse_exchange"],
        comm: Any = None,
    ) -> None:
        _check_int("input_dim", input_dim, 1, MAX_DIM)
        _check_int("output_dim", output_dim, 1, MAX_DIM)
        if isinstance(hidden, (int, np.integer)) and not isinstance(hidden, bool):
            hidden = (hidden,)
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
            raise ValueError(f"hidden must be a layer size or a sequence of layer sizes, got {hidden!r}")
        hidden = tuple(hidden)
        if not hidden:
            raise ValueError("hidden must name at least one hidden layer size")
        for h in hidden:
            _check_int("hidden layer size", h, 1, MAX_DIM)
        if lsh is not None and not isinstance(lsh, LSHConfig):
            raise ValueError(f"lsh must be an LSHConfig or None, got {type(lsh).__name__}")
        if lsh is _MODE_LSH:
            # Sampled hidden layers train per sample only, so they make that mode the default.
            sampled_hidden = hidden_lsh is not None and any(c is not None for c in hidden_lsh)
            default = "sample" if sampled_hidden else DEFAULT_MODE
            lsh = check_mode(default if mode is None else mode).lsh_config()
        elif mode is not None and check_mode(mode).name != mode_of(lsh):
            raise ValueError(f"mode={mode!r} contradicts lsh={lsh!r}, which trains in mode {mode_of(lsh)!r}; "
                             f"give one of them, or an lsh for that mode (slide.MODES[{mode!r}].lsh_config(...))")
        hidden_lsh = tuple(hidden_lsh) if hidden_lsh is not None else (None,) * len(hidden)
        if len(hidden_lsh) != len(hidden):
            raise ValueError(f"hidden_lsh has {len(hidden_lsh)} entries for {len(hidden)} hidden layers")
        if any(c is not None and not isinstance(c, LSHConfig) for c in hidden_lsh):
            raise ValueError("hidden_lsh entries must be LSHConfig or None")
        if hidden_lsh[0] is not None:
            raise ValueError("the first hidden layer (the sparse-input embedding) cannot be sampled")
        NETWORK["optimizer"].check(optimizer, "optimizer")
        if not (_finite_number(learning_rate) and learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive finite number, got {learning_rate!r}")
        check_schedule(lr_schedule)
        check_warmup(lr_warmup)
        if lr_schedule_steps is not None:
            _check_int("lr_schedule_steps", lr_schedule_steps, 1)
        NETWORK["input_norm"].check(input_norm, "input_norm")
        if not (_finite_number(input_dropout) and 0.0 <= input_dropout < 1.0):
            raise ValueError(f"input_dropout must be a number in [0, 1), got {input_dropout!r}")
        NETWORK["precision"].check(precision, "precision")
        NETWORK["neighbours"].check(neighbours, "neighbours")
        NETWORK["neighbour_weight"].check(neighbour_weight, "neighbour_weight")
        for name, value in (("beta1", beta1), ("beta2", beta2), ("eps", eps)):
            if not _finite_number(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        threads = default_threads() if threads is None else threads
        _check_int("threads", threads, 1, 1024)
        if threads > default_threads():
            warnings.warn(f"threads={threads} is more than the {default_threads()} CPUs this process may use; "
                          "extra threads wait for each other and make training slower, not faster",
                          RuntimeWarning, stacklevel=2)
        _check_int("seed", seed, 0, _MAX_SEED)
        NETWORK["sparse_exchange"].check(sparse_exchange, "sparse_exchange")

        self.input_dim, self.output_dim, self.hidden = int(input_dim), int(output_dim), hidden
        self.lsh, self.hidden_lsh = lsh, hidden_lsh
        self.optimizer, self.learning_rate, self.lr_schedule = optimizer, float(learning_rate), lr_schedule
        self.lr_warmup = float(lr_warmup)
        self.lr_schedule_steps = None if lr_schedule_steps is None else int(lr_schedule_steps)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.input_norm, self.input_dropout = input_norm, float(input_dropout)
        self.precision = precision
        self.neighbours, self.neighbour_weight = int(neighbours), float(neighbour_weight)
        self.memory: Optional[NeighbourMemory] = None  # the training points that vote (`remember`)
        self._set_vocabulary(None)  # the words the input features stand for
        self.threads, self.seed = int(threads), int(seed)
        self.sparse_exchange = sparse_exchange
        self.comm, self.output_shard = None, (0, self.output_dim)
        if comm is not None:
            self._join(comm)
        self.interrupted = False
        self._busy, self._busy_with = threading.RLock(), None
        config = self._core_config()
        self.memory_estimate: dict[str, int] = dict(_core.estimate_memory(config, ESTIMATE_BATCH))
        what = f"a {self.input_dim:,} -> {' -> '.join(map(str, self.hidden))} -> {self.output_dim:,} network with " \
               f"{self.threads} threads"
        if self.comm is not None:  # each rank checks its own share; rank 0 speaks for the job
            what += f" per rank (rank {self.comm.rank} of {self.comm.size})"
        memory.check_fits(self.memory_estimate, what, announce=self.comm is None or self.comm.rank == 0)
        self._core = _core.Network(config)
        if self.comm is not None:
            _core.set_collective(self._core, self.comm)
        # The int8 exact scan's quantized output layer, made again only when the weights change.
        self._scan_cache = _core.QuantizedCache()

    def _join(self, comm: Any) -> None:
        """Take this rank's block of the output layer (before the engine network is made)."""
        from .distributed.communicator import Communicator
        from .distributed.shards import shard_range

        if self.mode == "sample":
            raise ValueError("mode='sample' trains an active set per sample and cannot shard its output layer over "
                             "MPI ranks; use mode='batch' (the default) or 'dense'")
        self.comm = comm if isinstance(comm, Communicator) else Communicator(comm)
        self.output_shard = shard_range(self.output_dim, self.comm.size, self.comm.rank)
        if self.neighbours and self.comm.rank == 0:
            log.warning("the neighbours' vote is not used under MPI (each rank holds only its share of the training "
                        "points); predictions come from the network alone")

    # ----------------------------------------------------------------- configuration
    def _core_config(self) -> _core.NetworkConfig:
        c = _core.NetworkConfig()
        c.input_dim = self.input_dim
        layers = []
        for size, cfg in zip(self.hidden, self.hidden_lsh):
            layers.append(_layer(size, cfg))
        layers.append(_layer(self.output_shard[1], self.lsh))
        c.layers = layers
        if self.comm is not None:
            shard = _core.OutputShard()
            shard.offset, shard.total = self.output_shard[0], self.output_dim
            c.output_shard = shard
        c.sparse_exchange = getattr(_core.SparseExchange, self.sparse_exchange)
        o = _core.OptimizerConfig()
        o.kind = getattr(_core.OptimizerKind, self.optimizer)
        o.beta1, o.beta2, o.eps = self.beta1, self.beta2, self.eps
        c.optimizer = o
        c.threads = self.threads
        c.seed = self.seed
        c.bf16_weights = self.precision == "bf16"
        c.l2_normalize_input = self.input_norm == "l2"
        c.input_dropout = self.input_dropout
        return c

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments, JSON-serialisable (callable schedules are not)."""
        if callable(self.lr_schedule):
            raise ValueError("a network with a callable lr_schedule cannot be serialised; use a named schedule")
        return {
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "hidden": list(self.hidden),
            "lsh": self.lsh.to_dict() if self.lsh else None,
            "hidden_lsh": [c.to_dict() if c else None for c in self.hidden_lsh],
            "optimizer": self.optimizer,
            "learning_rate": self.learning_rate,
            "lr_schedule": self.lr_schedule,
            "lr_warmup": self.lr_warmup,
            "lr_schedule_steps": self.lr_schedule_steps,
            "beta1": self.beta1,
            "beta2": self.beta2,
            "eps": self.eps,
            "input_norm": self.input_norm,
            "input_dropout": self.input_dropout,
            "precision": self.precision,
            "neighbours": self.neighbours,
            "neighbour_weight": self.neighbour_weight,
            "threads": self.threads,
            "seed": self.seed,
            "sparse_exchange": self.sparse_exchange,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any], **overrides: Any) -> "Network":
        c = dict(config)
        c["lsh"] = LSHConfig.from_dict(c["lsh"]) if c.get("lsh") else None
        c["hidden_lsh"] = [LSHConfig.from_dict(h) if h else None for h in c.get("hidden_lsh", [])] or None
        c.update(overrides)
        return cls(**c)

    @property
    def mode(self) -> str:
        """How the output layer trains: "batch", "sample" or "dense" (read from `lsh`)."""
        return mode_of(self.lsh)

    @property
    def sampled(self) -> bool:
        return self.lsh is not None

    @property
    def memory_bytes(self) -> int:
        """Bytes held by weights, optimizer state, gradient buffers and hash tables."""
        return int(self._core.memory_bytes)

    def __repr__(self) -> str:
        out = f"sampled by {self.lsh.family.upper()} (K={self.lsh.k}, L={self.lsh.l})" if self.lsh else "dense"
        if self.mode == "batch":
            out += (f" per batch (batch_active={self.lsh.batch_active}, "
                    f"min_active={self.lsh.min_active})")
        elif self.mode == "sample":
            out += " per sample"
        ranks = "" if self.comm is None else (f", rank {self.comm.rank} of {self.comm.size} holding outputs "
                                              f"[{self.output_shard[0]}, {sum(self.output_shard)})")
        return (f"Network({self.input_dim} -> {' -> '.join(map(str, self.hidden))} -> {self.output_dim}, "
                f"output {out}, {self.optimizer}, lr={self.learning_rate:g}, {self.precision}, threads={self.threads}"
                f"{ranks})")

    def _rank_batches(self, n: Optional[int], batch_size: int) -> tuple[int, Optional[int]]:
        """This rank's share of each batch, and (under MPI) the batches every rank must take part
        in: the most any rank's `n` rows make. A single process: (batch_size, None)."""
        if self.comm is None:
            return batch_size, None
        from .distributed.shards import batch_share

        rank_batch = batch_share(batch_size, self.comm.size, self.comm.rank)
        return rank_batch, self.comm.largest(-(-n // rank_batch))

    def _on_every_rank(self, fn, *args):
        """fn(*args) here; under MPI, a rank whose data is refused stops every rank with an error
        naming it, instead of leaving the others waiting for it in the next collective call."""
        if self.comm is None:
            return fn(*args)
        try:
            out, error = fn(*args), None
        except (ValueError, FileNotFoundError) as e:
            out, error = None, e
        problems = self.comm.gather_objects(None if error is None else str(error))
        if error is not None:
            raise error
        refused = [(r, p) for r, p in enumerate(problems) if p]
        if refused:
            raise ValueError(f"rank {refused[0][0]} refused its data: {refused[0][1]}")
        return out

    # ----------------------------------------------------------------- training
    def prepare(self, X, Y: LabelsLike) -> "TrainingData":
        """Validate and convert X and Y once, for repeated `train_rows` calls."""
        X = as_features(X, self.input_dim)
        return TrainingData(X, as_labels(Y, self.output_dim, X.shape[0]))

    @_one_call_at_a_time
    def train_rows(self, data: "TrainingData", rows: np.ndarray, *, batch_size: int, lr, bar=None,
                   on_batch=None, steps: Optional[int] = None) -> dict[str, float]:
        """Train on data's `rows`, in that order, `batch_size` at a time.

        `lr` is a number or a function of the batch index within this call. Returns the summed loss,
        the samples with labels and the active outputs. Ctrl-C between batches raises
        TrainingInterrupted carrying how many rows were trained, so a caller can resume exactly.
        `on_batch(step, logs)`, if given, is called after every optimizer step. `steps` (under
        MPI: the most batches any rank has) pads the call with empty batches, since every rank
        takes part in every step.
        """
        arrays = (data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        check_batch_fits(self, batch_size, len(rows))  # before the first step: the engine sizes its workspace by it
        totals = {"loss": 0.0, "samples": 0, "active": 0}
        t0, done = time.perf_counter(), 0
        try:
            starts = list(range(0, len(rows), batch_size))
            starts += [len(rows)] * max(0, (steps or 0) - len(starts))
            for b, start in enumerate(starts):
                batch = rows[start:start + batch_size]
                rate = lr(b) if callable(lr) else lr
                stats = self._core.train_batch(*arrays, batch, rate)
                if stats["nonfinite_rows"] or not np.isfinite(stats["loss"]):
                    raise TrainingDiverged(
                        f"training diverged at step {self._core.counters()['step']}: "
                        + (f"{stats['nonfinite_rows']:,} parameter rows hold NaN or inf after the update"
                           if stats["nonfinite_rows"] else f"the batch's loss is {stats['loss']}")
                        + f" (learning rate {rate:g}); lower the learning rate", rows_done=start)
                done = start + len(batch)
                for k in totals:
                    totals[k] += stats[k]
                if on_batch is not None:
                    labelled = max(stats["samples"], 1)
                    on_batch(self._core.step, {
                        "loss": stats["loss"] / labelled, "samples": stats["samples"],
                        "active_per_sample": stats["active"] / labelled, "learning_rate": rate})
                if bar is not None:
                    bar.update(len(batch))
                    if b % 10 == 0:
                        bar.set_postfix(loss=f"{totals['loss'] / max(totals['samples'], 1):.4f}",
                                        samples_s=f"{done / max(time.perf_counter() - t0, 1e-9):,.0f}",
                                        active=f"{totals['active'] / max(totals['samples'], 1):,.0f}")
        except KeyboardInterrupt:
            raise TrainingInterrupted(done, totals) from None
        return totals

    @_one_call_at_a_time
    def fit(
        self,
        X,
        Y: Optional[LabelsLike] = None,
        *,
        epochs: int = 1,
        batch_size: int = 128,
        validation_data: Optional[tuple[Any, LabelsLike]] = None,
        validation_split: float = 0.0,
        validation_mode: str = "dense",
        early_stopping: Optional[int] = None,
        monitor: str = "P@1",
        restore_best: bool = True,
        shuffle: bool = True,
        progress: bool = True,
        callback=None,
        callbacks: Optional[Sequence[Any]] = None,
    ) -> History:
        """Train on X (samples x input_dim, sparse) and Y (labels), or on data streamed in pieces.

        Args:
            X: float features, scipy.sparse (CSR preferred) or a 2-D NumPy array. Or, with Y
                omitted, data larger than memory: a `slide.datasets.Stream` (a shard folder read
                shard by shard, shuffled by the stream's own seed), or any iterable of (X, Y)
                pieces, trained in the order given (a one-pass iterator allows one epoch).
            Y: labels: a sparse samples x output_dim matrix, a 0/1 indicator matrix, a 1-D vector of
                class ids, or one label id or list of label ids per sample.
            epochs: passes over the data (at most; see early_stopping).
            batch_size: samples per optimizer step (spread over the threads).
            validation_data: (X_val, Y_val) evaluated after each epoch (P@1/3/5, nDCG@1/3/5).
            validation_split: instead of validation_data, hold out this share of the training
                samples (chosen with the network's seed) for validation.
            validation_mode: ``"dense"`` (exact) or ``"sparse"`` (LSH inference) for validation.
            early_stopping: with validation, stop after this many epochs without a better
                ``monitor`` (None trains every epoch).
            monitor: the validation metric that decides which epoch is best: ``"P@k"``,
                ``"nDCG@k"`` (higher is better) or ``"loss"`` (exact softmax loss, lower is better).
            restore_best: with validation, end with the parameters of the best epoch (kept as a
                copy of the weights and biases, about a third of the network's memory with Adam),
                so the model returned is never worse on validation than the best epoch.
            shuffle: reshuffle the samples every epoch (seeded).
            progress: show a progress bar (samples/s, loss).
            callback: called as ``callback(network, epoch_metrics)`` after each epoch; returning
                ``False`` stops training.
            callbacks: objects with any of the hooks of `slide.callbacks.Callback`
                (``on_train_begin``, ``on_batch_end``, ``on_epoch_end``, ``on_train_end``).

        Ctrl-C stops at the end of the running batch; the model stays intact and usable, and
        ``History.interrupted`` (and ``network.interrupted``) is set.

        Raises:
            TrainingDiverged: in the batch where the loss or a parameter becomes NaN or inf. The
                network is then unusable; reload a saved model (the `slide train` run loop keeps
                its last good checkpoint and can back off the learning rate by itself).
        """
        _check_int("epochs", epochs, 1)
        _check_int("batch_size", batch_size, 1)
        if validation_mode not in ("dense", "sparse"):
            raise ValueError(f"validation_mode must be 'dense' or 'sparse', got {validation_mode!r}")
        if callback is not None and not callable(callback):
            raise ValueError(f"callback must be callable, got {callback!r}")
        hooks = CallbackList(callbacks)
        if isinstance(validation_split, bool) or not isinstance(validation_split, (int, float)) \
                or not 0.0 <= validation_split < 1.0:
            raise ValueError(f"validation_split must be a number in [0, 1), got {validation_split!r}")
        if validation_split and validation_data is not None:
            raise ValueError("give validation_data or validation_split, not both")
        if early_stopping is not None:
            _check_int("early_stopping (epochs of patience)", early_stopping, 1)
        streamed = Y is None
        if streamed and self.comm is not None:
            raise ValueError("under MPI, fit takes each rank's own rows in memory as X, Y (slide train reads each "
                             "rank's byte range of the training file); streams are for a single process")
        if streamed:
            pieces = _Pieces(self, X, epochs)
            if validation_split:
                raise ValueError("validation_split needs the training data in memory; with a stream, pass "
                                 "validation_data (or hold rows out with Stream.hold_out)")
            n = pieces.samples_per_epoch
            if n is None and self.lr_schedule_steps is None and (self.lr_schedule != "constant" or self.lr_warmup):
                raise ValueError(f"lr_schedule={self.lr_schedule!r} (or lr_warmup) over an iterable of pieces needs "
                                 "lr_schedule_steps, since the steps of an epoch are not known in advance; or pass "
                                 "a slide.datasets.Stream")
        else:
            data = self._on_every_rank(self.prepare, X, Y)
        val = None
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise ValueError("validation_data must be a pair (X_val, Y_val)")
            val = self._on_every_rank(_validation_pair, validation_data, self.input_dim, self.output_dim)
        elif validation_split:
            data, val = _hold_out(data, validation_split, self.seed)
        if val is None and (early_stopping is not None or monitor != "P@1"):
            raise ValueError("early_stopping and monitor need validation_data or validation_split")
        check_monitor(monitor, self._ranks(None))
        tracker = BestTracker(monitor, early_stopping)
        best_parameters = None
        if not streamed:
            n = len(data)
        if (n if self.comm is None else self.comm.total(n)) == 0:
            raise ValueError("X has no rows to train on")
        rank_batch, rank_steps = self._rank_batches(n, batch_size)
        steps_per_epoch = rank_steps if self.comm is not None else (-(-n // batch_size) if n is not None else None)
        total_steps = steps_per_epoch * epochs if n is not None else None
        rng = np.random.default_rng(self.seed + self._core.counters()["step"])
        history = History()
        self.interrupted = False
        self.memory = None  # epochs are judged by the network alone; the memory is this call's data (below)
        on_batch = (lambda step, logs: hooks.call("on_batch_end", self, step, logs)) if hooks.wants_batches() else None
        hooks.call("on_train_begin", self)
        for epoch in range(epochs):
            lr = self._rate(epoch * (steps_per_epoch or 0), total_steps)
            t0 = time.perf_counter()
            bar = progress_bar(n, f"epoch {epoch + 1}/{epochs}", progress and (self.comm is None or self.comm.rank == 0))
            try:
                if streamed:
                    totals = self._train_pieces(pieces.epoch(epoch, batch_size), batch_size, lr, bar, on_batch)
                else:
                    order = rng.permutation(n) if shuffle else np.arange(n)
                    totals = self.train_rows(data, order, batch_size=rank_batch, lr=lr, bar=bar, on_batch=on_batch,
                                             steps=rank_steps)
            except TrainingInterrupted as stop:
                totals = stop.totals
                self.interrupted = history.interrupted = True
                log.warning("training interrupted by the user during epoch %d; the model is intact", epoch + 1)
            finally:
                if bar is not None:
                    bar.close()
            seconds = time.perf_counter() - t0
            counted = max(totals["samples"], 1)
            metrics: dict[str, Any] = {
                "epoch": epoch + 1,
                "loss": totals["loss"] / counted,
                "seconds": seconds,
                "samples_per_second": totals["samples"] / max(seconds, 1e-9),
                "active_per_sample": totals["active"] / counted,
            }
            if val is not None and not self.interrupted:
                report = self.evaluate(*val, mode=validation_mode)
                if monitor == "loss":
                    report["loss"] = self.loss(*val)
                metrics.update({f"val_{k}": v for k, v in report.items()})
                if tracker.update(report, epoch + 1) and restore_best:
                    best_parameters = snapshot(self)
            history.epochs.append(metrics)
            log.info("epoch %d: %s", epoch + 1, metrics)
            stop = callback is not None and callback(self, metrics) is False
            stop = any(r is False for r in hooks.call("on_epoch_end", self, epoch + 1, metrics)) or stop
            if self.interrupted or stop:
                break
            if tracker.should_stop:
                history.stopped_early = True
                log.info("no better validation %s for %d epochs: stopping", monitor, early_stopping)
                break
        history.best_epoch, history.best_score = tracker.best_at, tracker.best
        if best_parameters is not None and tracker.best_at != len(history.epochs):
            restore(self, best_parameters)
            history.restored_best = True
        if self.comm is not None:
            pass  # no vote under MPI (see _join)
        elif self.neighbours and streamed:
            log.info("fit on a stream: no nearest-neighbour memory (it needs the training points in memory); "
                     "predictions use the network alone, or call remember() with the points to vote")
        elif self.neighbours:
            self.remember(data.X, data.Y)
            if val is not None and monitor != "loss":
                history.neighbour_weight_scores = self.tune_neighbour_weight(*val, monitor=monitor,
                                                                             mode=validation_mode)
        hooks.call("on_train_end", self, history)
        return history

    def _train_pieces(self, pieces, batch_size: int, lr, bar, on_batch) -> dict[str, float]:
        """train_rows over consecutive pieces, as one call: the rate's batch index runs on across them."""
        totals = {"loss": 0.0, "samples": 0, "active": 0}
        batches = 0
        for data, order in pieces:
            at = batches
            try:
                got = self.train_rows(data, order, batch_size=batch_size, lr=lambda b: lr(at + b), bar=bar,
                                      on_batch=on_batch)
            except TrainingInterrupted as stop:
                for k in totals:
                    totals[k] += stop.totals[k]
                raise TrainingInterrupted(stop.rows_done, totals) from None
            for k in totals:
                totals[k] += got[k]
            batches += -(-len(order) // batch_size)
        return totals

    def _rate(self, first_step_of_call: int, steps_of_call: Optional[int]):
        """The learning rate as a function of the batch index within a piece of training that
        starts `first_step_of_call` steps into its call (of `steps_of_call` steps)."""
        if self.lr_schedule_steps is not None:  # one schedule over the network's whole life
            start, total = self._core.step, self.lr_schedule_steps
        else:
            start, total = first_step_of_call, steps_of_call or 1  # partial_fit: a constant rate
        return lambda b: self.learning_rate * lr_multiplier(self.lr_schedule, start + b, total, self.lr_warmup)

    @_one_call_at_a_time
    def partial_fit(self, X, Y: LabelsLike, *, batch_size: int = 128, callbacks: Optional[Sequence[Any]] = None
                    ) -> "Network":
        """One pass over X, Y in their order, `batch_size` samples per step, continuing from
        where training stands (optimizer state, LSH tables, step count): for data that arrives in
        pieces or does not fit in memory at once. A decaying `lr_schedule` needs
        `lr_schedule_steps` (the schedule's length in steps across calls). Returns the network.
        """
        _check_int("batch_size", batch_size, 1)
        if self.lr_schedule_steps is None and (self.lr_schedule != "constant" or self.lr_warmup):
            raise ValueError(f"partial_fit with lr_schedule={self.lr_schedule!r} (or lr_warmup) needs "
                             "lr_schedule_steps: the number of optimizer steps the schedule spans across calls")
        hooks = CallbackList(callbacks)
        data = self._on_every_rank(self.prepare, X, Y)
        if (len(data) if self.comm is None else self.comm.total(len(data))) == 0:
            raise ValueError("X has no rows to train on")
        rank_batch, steps = self._rank_batches(len(data), batch_size)
        on_batch = (lambda step, logs: hooks.call("on_batch_end", self, step, logs)) if hooks.wants_batches() else None
        hooks.call("on_train_begin", self)
        self.interrupted = False
        try:
            self.train_rows(data, np.arange(len(data)), batch_size=rank_batch, lr=self._rate(0, None),
                            on_batch=on_batch, steps=steps)
        except TrainingInterrupted:
            self.interrupted = True
            log.warning("partial_fit interrupted by the user; the model is intact")
        if self.neighbours and self.comm is None:  # the pieces add up to the memory of everything trained on
            self.memory = self.memory.extended(data.X, data.Y) if self.memory else NeighbourMemory(data.X, data.Y)
        hooks.call("on_train_end", self, None)
        return self

    # ----------------------------------------------------------------- inference
    @_one_call_at_a_time
    def predict(self, X, k: int = 5, *, mode: str = "dense", use_neighbours: bool = True
                ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k labels per sample: (ids int32 [n, k], scores float32 [n, k]), best first.

        Scores are logits, plus ``neighbour_weight`` times the neighbours' vote when the network
        remembers its training points (`remember`; `fit` does it when ``neighbours`` > 0) and
        ``use_neighbours`` is true. ``mode="dense"`` scores every output neuron (exact);
        ``mode="sparse"`` scores only the neurons the LSH tables retrieve (fast, approximate;
        topped up with random neurons so at least k are scored). Missing entries get id -1.
        """
        _check_int("k", k, 1)
        if k > self.output_dim:
            raise ValueError(f"k={k} exceeds output_dim={self.output_dim}")
        if mode not in ("dense", "sparse"):
            raise ValueError(f"mode must be 'dense' or 'sparse', got {mode!r}")
        if mode == "sparse" and not self.sampled:
            raise ValueError("mode='sparse' needs an LSH-sampled output layer; this network is dense")
        X = self._on_every_rank(as_features, X, self.input_dim)
        if self.comm is not None:
            from .distributed.top_k import predict as predict_over_ranks

            return predict_over_ranks(self, X, k, mode == "dense")[:2]
        if use_neighbours and self._fuses:
            return self._fusion(X, k, mode == "dense")[0].top(self.neighbour_weight, k)
        return self._core.predict(X.indptr, X.indices, X.data, k, mode == "dense", cache=self._scan_cache)

    @property
    def _fuses(self) -> bool:
        return bool(self.neighbours) and self.memory is not None and self.neighbour_weight > 0 and self.comm is None

    def _fusion(self, X: sp.csr_matrix, k: int, dense: bool, normaliser: bool = False
                ) -> tuple[Fusion, Optional[np.ndarray]]:
        """The network's top-k and the neighbours' votes for X, ready to rank at any weight; and,
        with `normaliser` (dense only), the network's log-normaliser per sample, which only
        probabilities need: it costs an exp per output and sample, more than the scores."""
        if dense and normaliser:
            ids, logits, log_normalizer = self._core.predict(X.indptr, X.indices, X.data, k, True, True)
        else:  # ranking needs no normaliser, and LSH inference has no exact one
            (ids, logits), log_normalizer = self._core.predict(X.indptr, X.indices, X.data, k, dense,
                                                               cache=self._scan_cache), None
        votes = self.memory.votes(X, self.neighbours, self.threads)
        hidden = self._core.hidden(X.indptr, X.indices, X.data)
        state = self._core.state()
        W, b = state[f"layers.{len(self.hidden) - 1}.weight"], state[f"layers.{len(self.hidden) - 1}.bias"]

        def logits_of(rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
            out = np.empty(rows.size, np.float32)
            for s in range(0, rows.size, 1 << 16):
                r, l = rows[s:s + (1 << 16)], labels[s:s + (1 << 16)]
                out[s:s + r.size] = np.einsum("ij,ij->i", hidden[r], W[l]) + b[l]
            return out

        return Fusion(ids, logits, votes, logits_of), log_normalizer

    def remember(self, X, Y: LabelsLike) -> "Network":
        """Keep X, Y as the training points whose labels vote in predictions (replacing any kept
        before); `fit` calls it with its training data when ``neighbours`` > 0. Returns self."""
        X = as_features(X, self.input_dim)
        self.memory = NeighbourMemory(X, as_labels(Y, self.output_dim, X.shape[0]))
        return self

    @_one_call_at_a_time
    def tune_neighbour_weight(self, X, Y: LabelsLike, *, monitor: str = "P@1", mode: str = "dense"
                              ) -> dict[float, float]:
        """Set ``neighbour_weight`` to the weight in `slide.neighbours.WEIGHTS` with the best
        `monitor` on X, Y (validation data, not training data); returns every weight's score."""
        if self.memory is None or not self.neighbours:
            raise ValueError("tune_neighbour_weight needs neighbours > 0 and a memory (fit, or remember(X, Y))")
        ks = self._ranks(None)
        check_monitor(monitor, ks)
        if monitor == "loss":
            raise ValueError("the neighbour weight is picked by a ranking metric (P@k or nDCG@k), not loss")
        if mode not in ("dense", "sparse"):
            raise ValueError(f"mode must be 'dense' or 'sparse', got {mode!r}")
        X = as_features(X, self.input_dim)
        Yc = as_labels(Y, self.output_dim, X.shape[0])
        fusion, _ = self._fusion(X, max(ks), mode == "dense")
        self.neighbour_weight, scores = pick_weight(fusion, Yc, ks, monitor)
        log.info("neighbour weight %g: validation %s %s", self.neighbour_weight, monitor, scores)
        return scores

    @_one_call_at_a_time
    def evaluate(self, X, Y: LabelsLike, *, ks: Optional[Sequence[int]] = None,
                 mode: str = "dense", use_neighbours: bool = True) -> dict[str, float]:
        """P@k and nDCG@k for each k in ks (averaged over all samples).

        ks defaults to 1, 3 and 5, leaving out those above output_dim.
        """
        ks = self._ranks(ks)
        X, Yc = self._on_every_rank(_validation_pair, (X, Y), self.input_dim, self.output_dim, "")
        ids, _ = self.predict(X, k=max(ks), mode=mode, use_neighbours=use_neighbours)
        report = ranking_report(ids, Yc, ks)
        if self.comm is None:
            return report
        n = self.comm.total(X.shape[0])  # every rank's samples, each counted once
        return {name: self.comm.total(value * X.shape[0]) / max(n, 1.0) for name, value in report.items()}

    def _ranks(self, ks: Optional[Sequence[int]]) -> tuple[int, ...]:
        if ks is None:
            return tuple(k for k in _DEFAULT_KS if k <= self.output_dim)
        if isinstance(ks, (int, np.integer)) or not hasattr(ks, "__iter__"):
            raise ValueError(f"ks must be a sequence of ranks such as (1, 3, 5), got {ks!r}")
        ks = tuple(ks)
        if not ks:
            raise ValueError("ks must name at least one rank k")
        for k in ks:
            _check_int("each k in ks", k, 1, self.output_dim)
        return ks

    @_one_call_at_a_time
    def predict_proba(self, X, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k labels per sample with their softmax probabilities over every output neuron:
        (ids int32 [n, k], probabilities float32 [n, k]), best first. Exact (dense) scoring; the
        normaliser costs one exp per output and sample on top of `predict`. With a memory of
        training points, the probabilities are the fused model's, softmax(logit + weight x vote),
        normalised exactly over every output."""
        _check_int("k", k, 1, self.output_dim)
        X = self._on_every_rank(as_features, X, self.input_dim)
        if self.comm is not None:
            from .distributed.top_k import predict as predict_over_ranks

            ids, scores, log_normalizer = predict_over_ranks(self, X, k, True, normaliser=True)
            return ids, np.exp(scores - log_normalizer[:, None]).astype(np.float32)
        if self._fuses:
            fusion, log_normalizer = self._fusion(X, k, True, normaliser=True)
            ids, scores = fusion.top(self.neighbour_weight, k)
            return ids, np.exp(scores - fusion.log_normalizer(self.neighbour_weight, log_normalizer)[:, None]
                               ).astype(np.float32)
        ids, scores, log_normalizer = self._core.predict(X.indptr, X.indices, X.data, k, True, True)
        return ids, np.exp(scores - log_normalizer[:, None]).astype(np.float32)

    @_one_call_at_a_time
    def transform(self, X) -> np.ndarray:
        """The top hidden layer's activations for every sample: a (samples, hidden[-1]) float32
        array, the representation the output layer scores (exact: no sampling)."""
        X = as_features(X, self.input_dim)
        return self._core.hidden(X.indptr, X.indices, X.data)

    def embeddings(self) -> np.ndarray:
        """A copy of the input embedding: one row of hidden[0] floats per input feature (for a
        Text8 model, one vector per vocabulary word)."""
        return np.array(self.weights()["input.weight"], copy=True)

    # ----------------------------------------------------------------- word vectors
    @property
    def vocabulary(self) -> Optional[list[str]]:
        """The word each input feature stands for (feature i is ``vocabulary[i]``), or None. `slide
        train --dataset text8` sets it; set it yourself for a model trained on your own one-hot
        words. Saved in the model file; the word-vector methods (`get_word_vector`, `most_similar`,
        `save_word2vec`, from `slide.word_vectors.WordVectorLookup`) need it."""
        return None if self._vocabulary is None else list(self._vocabulary)

    @vocabulary.setter
    def vocabulary(self, words: Optional[Sequence[str]]) -> None:
        self._set_vocabulary(None if words is None else word_vectors.check_vocabulary(words, self.input_dim))

    def _word_matrix(self) -> np.ndarray:
        return self.weights()["input.weight"]

    @_one_call_at_a_time
    def loss(self, X, Y: LabelsLike) -> float:
        """Mean exact softmax cross-entropy (every output neuron) over samples with labels."""
        if self.comm is not None:
            raise ValueError("loss() scores one process's whole output layer; under MPI each rank holds a part: "
                             "monitor a ranking metric (P@k, nDCG@k) instead")
        X = as_features(X, self.input_dim)
        Yc = as_labels(Y, self.output_dim, X.shape[0])
        return float(self._core.mean_loss(X.indptr, X.indices, X.data, Yc.indptr, Yc.indices))

    # ----------------------------------------------------------------- persistence
    @_one_call_at_a_time
    def save(self, path: "os.PathLike[str] | str", *, include_optimizer: bool = True,
             extra: Optional[dict] = None) -> None:
        """Write the model atomically (temp file, fsync, rename). No pickle: loading runs no code.

        `extra` is stored in the file's JSON header (read it back with `slide.model_file.read_header`).
        """
        if self.comm is not None:  # a folder: one file per rank and a manifest
            from .distributed.checkpoint import save_shards

            save_shards(self, path, include_optimizer=include_optimizer, extra=extra)
            return
        from .model_file import save_network

        save_network(self, path, include_optimizer=include_optimizer, extra=extra)

    def __reduce__(self):
        """Pickling (and copy.deepcopy, joblib) stores the model file's bytes: no engine pointers,
        and unpickling runs the same checks as `load`."""
        if self.comm is not None:
            raise TypeError("a network sharded over MPI ranks cannot be pickled; save() it (one file per rank)")
        from .model_file import network_to_bytes

        return _network_from_bytes, (type(self), network_to_bytes(self))

    @classmethod
    def load(cls, path: "os.PathLike[str] | str", *, threads: Optional[int] = None, comm: Any = None) -> "Network":
        """Load a model written by `save`; predictions are identical to the saved model's. With
        `comm`, every rank loads its shard of a model saved under MPI by as many ranks
        (`slide reshard` changes the number of ranks, or makes one single-process file)."""
        from .distributed.checkpoint import is_sharded, load_shards
        from .model_file import load_network

        if comm is not None or is_sharded(path):
            return load_shards(cls, path, comm, threads=threads)
        return load_network(cls, path, threads=threads)

    # ----------------------------------------------------------------- introspection
    def weights(self) -> dict[str, np.ndarray]:
        """Writable views of the parameters, optimizer state and LSH tables (no copies)."""
        return self._core.state()

    def table_stats(self) -> dict[str, Any]:
        """Counters of the optimizer and of every sampled layer's LSH maintenance."""
        return self._core.counters()


def _network_from_bytes(cls, data: bytes) -> "Network":
    from .model_file import network_from_bytes

    return network_from_bytes(cls, data)


class _Pieces:
    """What `fit` trains on when Y is omitted: a Stream, or an iterable of (X, Y) pieces."""

    def __init__(self, network: "Network", source: Any, epochs: int) -> None:
        self.network, self.source = network, source
        self.samples_per_epoch = source.samples_per_epoch if isinstance(source, Stream) else None
        if not isinstance(source, Stream):
            if sp.issparse(source) or isinstance(source, np.ndarray):
                raise ValueError("fit(X) without Y: X must be a slide.datasets.Stream or an iterable of (X, Y) "
                                 "pieces; for a matrix, pass its labels as Y")
            try:
                is_iterator = iter(source) is source
            except TypeError:
                raise ValueError(f"fit(X) without Y needs a slide.datasets.Stream or an iterable of (X, Y) pieces, "
                                 f"got {type(source).__name__}") from None
            if is_iterator and epochs > 1:
                raise ValueError("an iterator of pieces can be read once, so it trains one epoch; pass epochs=1, a "
                                 "list, or a slide.datasets.Stream")

    def epoch(self, epoch: int, batch_size: int):
        net = self.network
        if isinstance(self.source, Stream):
            prepare = lambda split: net.prepare(split.X, split.Y)  # noqa: E731
            for segment in self.source.segments(epoch, batch_size=batch_size, prepare=prepare):
                yield segment.data, segment.order
            return
        for i, piece in enumerate(self.source):
            if not isinstance(piece, (tuple, list)) or len(piece) != 2:
                raise ValueError(f"piece {i} of the training data is not an (X, Y) pair")
            data = net.prepare(*piece)
            yield data, np.arange(len(data))


def _validation_pair(pair: Any, input_dim: int, output_dim: int, what: str = "validation "
                     ) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(X, Y) checked and converted; `what` prefixes their names in errors."""
    Xv = as_features(pair[0], input_dim, f"{what}X")
    return Xv, as_labels(pair[1], output_dim, Xv.shape[0], f"{what}Y")


def _hold_out(data: TrainingData, share: float, seed: int) -> tuple[TrainingData, tuple]:
    train, val = held_out_rows(len(data), share, seed)
    return TrainingData(data.X[train], data.Y[train]), (data.X[val], data.Y[val])


def _layer(size: int, cfg: Optional[LSHConfig]) -> _core.LayerConfig:
    layer = _core.LayerConfig()
    layer.size = int(size)
    layer.sampled = cfg is not None
    if cfg is not None:
        layer.lsh = cfg.to_core()
    return layer


def _finite_number(value: Any) -> bool:
    """A real number that a float holds finitely (ints beyond float's range are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_int(name: str, value: Any, minimum: int, maximum: Optional[int] = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum:,}, got {value:,}")

