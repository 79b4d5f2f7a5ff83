"""The user-facing network: sparse input -> dense hidden layers -> a huge softmax output that is
either dense (full softmax, the exact reference) or sampled by LSH (SLIDE).

`Network` is the model: its configuration, the engine handle, its parameters and exact or LSH
top-k. What else a user calls on it is delegated: training to `slide.training` (one loop for
`fit`, `partial_fit` and `slide train`), prediction with the neighbours' vote and the re-ranker to
`slide.prediction`, where it runs (one process or MPI ranks) to a `slide.distributed.strategy`,
and files to `slide.model_file` and `slide.distributed.checkpoint`."""

from __future__ import annotations

import logging
import threading
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import memory, word_vectors
from ._core import Network as Engine, QuantizedCache, estimate_memory, set_collective
from ._inputs import LabelsLike, as_features, as_labels
from .batch_memory import ESTIMATE_BATCH, check_batch_fits
from .config import LSHConfig
from .metrics import ranking_report
from .model import arguments, description
from .model.arguments import MODE_LSH, default_threads
from .model.batches import train_batches
from .model.checks import check_int, check_scoring, ranks_for
from .model.data import TrainingData, validation_pair
from .model.engine_config import engine_config
from .model.errors import TrainingDiverged, TrainingInterrupted
from .model.guard import one_call_at_a_time
from .modes import mode_of
from .network_files import NetworkFiles, _network_from_bytes  # noqa: F401 (pickles name it here)
from .neighbours import NeighbourMemory
from .prediction.methods import FusedPrediction
from .label_tree import LabelForest
from .reranker import ShortlistReranker
from .schedules import Schedule
from .settings import NETWORK, defaults
from .distributed.strategy import strategy_for
from .epoch_average import NO_AVERAGING
from .training import fit as fitting, partial_fit as partial_fitting
from .training.history import History

log = logging.getLogger("slide")

_D = defaults(NETWORK)    # the constructor's defaults, declared in slide.settings

__all__ = ["Network", "History", "TrainingData", "TrainingDiverged", "TrainingInterrupted", "default_threads"]


class Network(FusedPrediction, NetworkFiles, word_vectors.InputVocabulary):
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
        output_loss: ``"softmax"`` (one softmax over a sample's active outputs, the target spread over
            its labels) or ``"decoupled"`` (each label against the negatives alone, averaged over
            the labels: a point's labels do not compete for one unit of probability).
        precision: ``"fp32"``, or ``"bf16"``: training reads BF16 copies of the weight rows (half the
            memory traffic; ``vdpbf16ps`` with AVX-512 BF16, exact emulation elsewhere) while the
            optimizer updates fp32 master weights; ``mode="dense"`` predicts with the fp32 weights.
        matmul: ``"fp32"``, or ``"bf16"``: in the batch and dense modes the output layer's three
            matrix products per batch (logits, the gradient to the hidden layer, the weights'
            gradient) round their inputs to BF16 and sum in fp32, where the CPU has AVX-512 BF16
            (``vdpbf16ps``: twice an fp32 FMA's multiply-adds) or AMX (the tile unit's
            ``tdpbf16ps``); elsewhere they stay fp32, as does everything else (the optimizer,
            the weights, prediction).
        neighbours, neighbour_weight: predictions add ``neighbour_weight`` x the vote of the
            ``neighbours`` most similar training points (`remember`; 0: no vote).
        neighbour_space: where those points are similar: "input" (cosine of the features),
            "hidden" (cosine of the top hidden layer, `transform`) or "both" (the votes averaged).
        rerank, rerank_weight: `fit` then trains per-label linear classifiers on each training
            point's ``rerank`` best labels (four times as many with the points in memory), and
            predictions add ``rerank_weight`` x their score on the network's ``rerank`` best and
            the voted labels; a label below the lists they trained on scores -1 (`fit_reranker`,
            `slide.reranker`; 0: no re-ranker).
        label_tree, tree_weight: `fit` then trains a label tree with at most ``label_tree`` labels
            a leaf on the training points in memory (`fit_label_tree`, `slide.label_tree`; 0: none),
            and predictions add ``tree_weight`` x its log-probability of each candidate, its beam's too.
        label_trees: how many such trees, each split from its own seed, are trained and averaged
            (`slide.label_tree.LabelForest`; omikuji's n_trees).
        fusion_weights: ``"auto"`` (`fit` may learn the fusion weights where they beat the grid's
            pick; `slide.prediction.learned_weights`) or ``"grid"`` (the grid's pick alone).
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
            ``pip install "slide[mpi]"``; see docs/mpi.md, "Training on a cluster".
    """

    def __init__(
        self, input_dim: int, output_dim: int, hidden: Union[int, Sequence[int]] = tuple(_D["hidden"]), *,
        mode: Optional[str] = None, lsh: Optional[LSHConfig] = MODE_LSH,
        hidden_lsh: Optional[Sequence[Optional[LSHConfig]]] = None, optimizer: str = _D["optimizer"],
        learning_rate: float = _D["learning_rate"], lr_schedule: Schedule = _D["lr_schedule"],
        lr_warmup: float = _D["lr_warmup"], lr_schedule_steps: Optional[int] = None, beta1: float = _D["beta1"],
        beta2: float = _D["beta2"], eps: float = _D["eps"], input_norm: str = _D["input_norm"],
        input_dropout: float = _D["input_dropout"], precision: str = _D["precision"], matmul: str = _D["matmul"],
        neighbours: int = _D["neighbours"], neighbour_weight: float = _D["neighbour_weight"],
        neighbour_space: str = _D["neighbour_space"], output_loss: str = _D["output_loss"],
        rerank: int = _D["rerank"], rerank_weight: float = _D["rerank_weight"], label_tree: int = _D["label_tree"],
        tree_weight: float = _D["tree_weight"], label_trees: int = _D["label_trees"],
        fusion_weights: str = _D["fusion_weights"], threads: Optional[int] = None,
        seed: int = 0,
        sparse_exchange: str = _D["sparse_exchange"], comm: Any = None,
    ) -> None:
        hidden, lsh, hidden_lsh = arguments.layers(input_dim, output_dim, hidden, mode, lsh, hidden_lsh)
        arguments.check_training(optimizer, learning_rate, lr_schedule, lr_warmup, lr_schedule_steps,
                                 (beta1, beta2, eps))
        arguments.check_choices(input_norm, input_dropout, precision, matmul, neighbours, neighbour_weight,
                                sparse_exchange, seed, rerank, rerank_weight, neighbour_space, output_loss, label_tree,
                                tree_weight, label_trees, fusion_weights)
        self.input_dim, self.output_dim, self.hidden = int(input_dim), int(output_dim), hidden
        self.lsh, self.hidden_lsh = lsh, hidden_lsh
        self.optimizer, self.learning_rate, self.lr_schedule = optimizer, float(learning_rate), lr_schedule
        self.lr_warmup = float(lr_warmup)
        self.lr_schedule_steps = None if lr_schedule_steps is None else int(lr_schedule_steps)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.input_norm, self.input_dropout, self.output_loss = input_norm, float(input_dropout), output_loss
        self.precision, self.matmul = precision, matmul
        self.neighbours, self.neighbour_weight = int(neighbours), float(neighbour_weight)
        self.neighbour_space = neighbour_space
        self.memory: Optional[NeighbourMemory] = None  # the training points that vote (`remember`)
        self.rerank, self.rerank_weight = int(rerank), float(rerank_weight)
        self.reranker: Optional[ShortlistReranker] = None  # trained by `fit_reranker`
        self.label_tree, self.tree_weight, self.label_trees = int(label_tree), float(tree_weight), int(label_trees)
        self.tree: Optional[LabelForest] = None  # trained by `fit_label_tree`
        self.fusion_weights, self.weight_choice = fusion_weights, None  # the rule; its last WeightChoice
        self._set_vocabulary(None)  # the words the input features stand for
        self.threads, self.seed = arguments.threads(threads), int(seed)
        self.sparse_exchange = sparse_exchange
        # one process, or this rank of an MPI job
        self.ranks = strategy_for(comm, self.mode, self.neighbours, self.rerank)
        self.output_shard = (0, self.output_dim) if self.comm is None else self.ranks.output_shard(self.output_dim)
        self.interrupted = False
        self.parameter_writes = 0  # parameters put back in place (slide.early_stopping.restore), not trained
        self._busy, self._busy_with = threading.RLock(), None
        self._make_engine()

    def _make_engine(self) -> None:
        """The engine's network, once its memory estimate fits what is available."""
        config = engine_config(self)
        self.memory_estimate: dict[str, int] = dict(estimate_memory(config, ESTIMATE_BATCH))
        what = f"a {self.input_dim:,} -> {' -> '.join(map(str, self.hidden))} -> {self.output_dim:,} network"
        # each rank checks its own share; rank 0 speaks for the job
        ranks = "" if self.comm is None else f" per rank (rank {self.comm.rank} of {self.comm.size})"
        memory.check_fits(self.memory_estimate, f"{what} with {self.threads} threads{ranks}", announce=self.ranks.speaks)
        self._core = Engine(config)
        if self.comm is not None:
            set_collective(self._core, self.comm)
        # The int8 exact scan's quantized output layer, made again only when the weights change.
        self._scan_cache = QuantizedCache()

    # ----------------------------------------------------------------- configuration
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments, JSON-serialisable (callable schedules are not)."""
        return description.config_of(self)

    @classmethod
    def from_config(cls, config: dict[str, Any], **overrides: Any) -> "Network":
        c = dict(config)
        c["lsh"] = LSHConfig.from_dict(c["lsh"]) if c.get("lsh") else None
        c["hidden_lsh"] = [LSHConfig.from_dict(h) if h else None for h in c.get("hidden_lsh", [])] or None
        c.update(overrides)
        return cls(**c)

    @property
    def comm(self) -> Any:
        """This rank's communicator under MPI (`slide.distributed.communicator.Communicator`), else None."""
        return self.ranks.comm

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
        return description.describe(self)

    # ----------------------------------------------------------------- training
    def prepare(self, X, Y: LabelsLike) -> TrainingData:
        """Validate and convert X and Y once, for repeated `train_rows` calls."""
        X = as_features(X, self.input_dim)
        return TrainingData(X, as_labels(Y, self.output_dim, X.shape[0]))

    @one_call_at_a_time
    def train_rows(self, data: TrainingData, rows: np.ndarray, *, batch_size: int, lr, bar=None,
                   on_batch=None, steps: Optional[int] = None) -> dict[str, float]:
        """Train on data's `rows`, in that order, `batch_size` at a time.

        `lr` is a number or a function of the batch index within this call. Returns the summed loss,
        the samples with labels and the active outputs. Ctrl-C between batches raises
        TrainingInterrupted carrying how many rows were trained, so a caller can resume exactly.
        `on_batch(step, logs)`, if given, is called after every optimizer step. `steps` (under
        MPI: the most batches any rank has) pads the call with empty batches, since every rank
        takes part in every step.
        """
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        check_batch_fits(self, batch_size, len(rows))  # before the first step: the engine sizes its workspace by it
        return train_batches(self._core, data, rows, batch_size=batch_size, lr=lr, bar=bar, on_batch=on_batch,
                             steps=steps)

    @one_call_at_a_time
    def fit(self, X, Y: Optional[LabelsLike] = None, *, epochs: int = 1, batch_size: int = 128,
            validation_data: Optional[tuple[Any, LabelsLike]] = None, validation_split: float = 0.0,
            validation_mode: str = "dense", early_stopping: Optional[int] = None, monitor: str = "P@1",
            restore_best: bool = True, averaging: str = NO_AVERAGING, shuffle: bool = True, progress: bool = True,
            callback=None, callbacks: Optional[Sequence[Any]] = None) -> History:
        """Train on X (samples x input_dim, sparse) and Y (labels), or on data streamed in pieces.

        Args:
            X: float features, scipy.sparse (CSR preferred) or a 2-D NumPy array. Or, with Y
                omitted, data larger than memory: a `slide.datasets.Stream` (a shard folder read
                shard by shard, shuffled by the stream's own seed), or any iterable of (X, Y)
                pieces, trained in the order given (a one-pass iterator allows one epoch). A
                Stream also trains the re-ranker (``rerank``); neither has the vote.
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
            averaging: ``"swa"``: with validation, from the epoch after the first quarter of
                `epochs` on, validation also judges the mean of the parameters at the ends of the
                epochs since and keeps whichever is better; the network ends with the best model
                judged, a mean when it won (``History.averaged_from``). Training itself goes on
                from its own parameters (`slide.epoch_average`). ``"off"``: each epoch's own.
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
        return fitting.fit(self, X, Y, epochs=epochs, batch_size=batch_size, validation_data=validation_data,
                           validation_split=validation_split, validation_mode=validation_mode,
                           early_stopping=early_stopping, monitor=monitor, restore_best=restore_best,
                           averaging=averaging,
                           shuffle=shuffle, progress=progress, callback=callback, callbacks=callbacks)

    @one_call_at_a_time
    def partial_fit(self, X, Y: LabelsLike, *, batch_size: int = 128, callbacks: Optional[Sequence[Any]] = None
                    ) -> "Network":
        """One pass over X, Y in their order, `batch_size` samples per step, continuing from
        where training stands (optimizer state, LSH tables, step count): for data that arrives in
        pieces or does not fit in memory at once. A decaying `lr_schedule` needs
        `lr_schedule_steps` (the schedule's length in steps across calls). Returns the network.
        """
        return partial_fitting.partial_fit(self, X, Y, batch_size=batch_size, callbacks=callbacks)

    # ----------------------------------------------------------------- inference
    @one_call_at_a_time
    def predict(self, X, k: int = 5, *, mode: str = "dense", use_neighbours: bool = True
                ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k labels per sample: (ids int32 [n, k], scores float32 [n, k]), best first.

        Scores are logits, plus ``neighbour_weight`` times the neighbours' vote when the network
        remembers its training points (`remember`; `fit` does it when ``neighbours`` > 0) and
        ``use_neighbours`` is true, plus ``rerank_weight`` times the re-ranker's score on the
        network's ``rerank`` best labels when it has one (`fit_reranker`), plus ``tree_weight`` times
        the label tree's log-probability when it has one (`fit_label_tree`). ``mode="dense"``
        scores every output neuron (exact); ``mode="sparse"`` scores only the neurons the LSH tables retrieve (fast, approximate;
        topped up with random neurons so at least k are scored). Missing entries get id -1.
        """
        check_int("k", k, 1)
        if k > self.output_dim:
            raise ValueError(f"k={k} exceeds output_dim={self.output_dim}")
        check_scoring(mode)
        if mode == "sparse" and not self.sampled:
            raise ValueError("mode='sparse' needs an LSH-sampled output layer; this network is dense")
        X = self.ranks.on_every_rank(as_features, X, self.input_dim)
        composed = self.composed(use_neighbours)
        if composed is not None:
            return composed.top(X, k, mode == "dense", self.neighbour_weight, self.rerank_weight, self.tree_weight)
        return self.ranks.top_k(self, X, k, mode == "dense")

    @one_call_at_a_time
    def evaluate(self, X, Y: LabelsLike, *, ks: Optional[Sequence[int]] = None,
                 mode: str = "dense", use_neighbours: bool = True) -> dict[str, float]:
        """P@k and nDCG@k for each k in ks (averaged over all samples).

        ks defaults to 1, 3 and 5, leaving out those above output_dim.
        """
        ks = self._ranks(ks)
        X, Yc = self.ranks.on_every_rank(validation_pair, (X, Y), self.input_dim, self.output_dim, "")
        ids, _ = self.predict(X, k=max(ks), mode=mode, use_neighbours=use_neighbours)
        return self.ranks.mean(ranking_report(ids, Yc, ks), X.shape[0])

    def _ranks(self, ks: Optional[Sequence[int]]) -> tuple[int, ...]:
        return ranks_for(ks, self.output_dim)

    @one_call_at_a_time
    def predict_proba(self, X, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k labels per sample with their softmax probabilities over every output neuron:
        (ids int32 [n, k], probabilities float32 [n, k]), best first. Exact (dense) scoring; the
        normaliser costs one exp per output and sample on top of `predict`. With a memory of
        training points, the probabilities are the fused model's, softmax(logit + weight x vote),
        normalised exactly over every output."""
        check_int("k", k, 1, self.output_dim)
        X = self.ranks.on_every_rank(as_features, X, self.input_dim)
        if self.voted is not None:
            return self.voted.top_proba(X, k, self.neighbour_weight, self.rerank_weight, self.tree_weight)
        ids, scores, log_normalizer = self.ranks.top_k(self, X, k, True, normaliser=True)
        return ids, np.exp(scores - log_normalizer[:, None]).astype(np.float32)

    @one_call_at_a_time
    def transform(self, X) -> np.ndarray:
        """The top hidden layer's activations for every sample: a (samples, hidden[-1]) float32
        array, the representation the output layer scores (exact: no sampling)."""
        X = as_features(X, self.input_dim)
        return self._core.hidden(X.indptr, X.indices, X.data)

    def embeddings(self) -> np.ndarray:
        """A copy of the input embedding: one row of hidden[0] floats per input feature (for a
        Text8 model, one vector per vocabulary word)."""
        return np.array(self.weights()["input.weight"], copy=True)

    @one_call_at_a_time
    def loss(self, X, Y: LabelsLike) -> float:
        """Mean exact softmax cross-entropy (every output neuron) over samples with labels."""
        if self.comm is not None:
            raise ValueError("loss() scores one process's whole output layer; under MPI each rank holds a part: "
                             "monitor a ranking metric (P@k, nDCG@k) instead")
        X = as_features(X, self.input_dim)
        Yc = as_labels(Y, self.output_dim, X.shape[0])
        return float(self._core.mean_loss(X.indptr, X.indices, X.data, Yc.indptr, Yc.indices))

    # ----------------------------------------------------------------- introspection
    def weights(self) -> dict[str, np.ndarray]:
        """Writable views of the parameters, optimizer state and LSH tables (no copies); gradient
        accumulators not allocated (docs/python.md, Memory) are read-only views of zeros."""
        return self._core.state()

    def table_stats(self) -> dict[str, Any]:
        """Counters of the optimizer and of every sampled layer's LSH maintenance."""
        return self._core.counters()
