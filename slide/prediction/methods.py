"""What `Network` offers for prediction beyond the network alone: the neighbours' vote
(`remember`, `tune_neighbour_weight`), the shortlist re-ranker (`fit_reranker`) and the label
tree (`fit_label_tree`), and the weights that fuse them (`tune_fusion_weights`). A mixin, so that
`Network` stays the model."""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Optional

from .._inputs import LabelsLike, as_features, as_labels
from ..datasets.stream import Stream
from ..early_stopping import check_monitor
from ..label_tree import LEAF_SIZE, LabelForest
from ..model.checks import check_int, check_scoring
from ..model.guard import one_call_at_a_time
from ..neighbours import WEIGHTS, NeighbourMemory, Representation
from ..reranker import EPOCHS, WEIGHTS as RERANK_WEIGHTS, ShortlistReranker, check_c, points_per_label_of
from .fused import VotedNetwork
from .reranker_training import ADAGRAD, reranker_from_memory, reranker_from_stream, rerankers_over_c, training_lists

log = logging.getLogger("slide")

# What picks the fusion weights on the held-out points, whatever picks the epoch (`monitor`):
# nDCG@5 grades each point's whole top 5, where P@1 sees one hit or miss a point, so a few hundred
# to a few thousand points rank the weight pairs more steadily. Measured at 1b207bd, slide with
# no flags, test P@1 / P@5, picked by P@1 -> by nDCG@5: debian-rdeps over three seeds 0.204 /
# 0.096 -> 0.210 / 0.101 (its 522 held-out points picked vote weights 0, 128, 32 by P@1; 16, 16,
# 32 by nDCG@5); debian-deps 0.697 / 0.359 -> 0.696 / 0.362 (two seeds); debian-deps-by-source
# 0.638 / 0.317 -> 0.637 / 0.321 (two seeds); debian-tags 0.842 / 0.494 -> 0.845 / 0.496;
# Delicious 0.678 / 0.571 -> 0.687 / 0.574; Corel5k 0.404 / 0.252 -> 0.410 / 0.265 (one run each).
FUSION_MONITOR = "nDCG@5"
# The label tree's weights `tune_fusion_weights` tries, beside the vote's and the re-ranker's. On
# debian-rdeps (slide's fused scores and the tree on the union of their top 25, test P@1 / P@5, by
# script): 0 0.217 / 0.104, 0.5 0.224 / 0.108, 1 0.228 / 0.110, 2 0.227 / 0.111, 4 0.225 / 0.109,
# the tree alone 0.225 / 0.107.
TREE_WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0)
# Below this many training points a label (the mean over the labels that have any), a network with
# a label tree trains no re-ranker: the tree's own per-label classifiers (trained on every point that
# reaches their leaf) re-score the candidates in its place, weighted by ``rerank_weight``. Slide's
# network, vote and tree (leaves of 32), test P@1 / P@5 at the best weights on the test split, by
# script: debian-rdeps (3.8 points a label) 0.226 / 0.108 with a re-ranker, 0.225 / 0.110 with the
# tree's classifiers in its place, and 2.8 s less training; debian-deps (6.9) 0.707 / 0.372 against
# 0.701 / 0.368, debian-deps-by-source (6.9) 0.649 / 0.329 against 0.646 / 0.326.
TREE_RESCORES_BELOW = 5.0


def _few_points_a_label(net: Any, X, Y: LabelsLike) -> bool:
    """Whether Y's labels (of the points X, in memory) have fewer than TREE_RESCORES_BELOW points
    each on average."""
    labels = as_labels(Y, net.output_dim, as_features(X, net.input_dim).shape[0])
    return points_per_label_of(labels) < TREE_RESCORES_BELOW


def _every_point(X, Y: Optional[LabelsLike]) -> Optional[tuple]:
    """(X, Y): the training points in memory, or a Stream's (Y None) when it holds every point
    at once (`Stream.holds_every_point`); None for a Stream of several shards."""
    if isinstance(X, Stream):
        if Y is not None:
            raise ValueError("a Stream holds its labels: pass it without Y")
        points = X.one_shard_points()
        return None if points is None else (points.X, points.Y)
    if Y is None:
        raise ValueError("the training points need Y, or a slide.datasets.Stream as X")
    return X, Y


def fusion_monitor(ks: tuple[int, ...]) -> str:
    """FUSION_MONITOR, or nDCG at the deepest rank reported where there are fewer than 5 labels."""
    return FUSION_MONITOR if 5 in ks else f"nDCG@{max(ks)}"


class FusedPrediction:
    """The vote and the re-ranker of a `Network` (which sets memory, reranker and their settings)."""

    memory: Optional[NeighbourMemory]
    reranker: Optional[ShortlistReranker]
    tree: Optional[LabelForest]

    @property
    def voted(self: Any) -> Optional[VotedNetwork]:
        """This network composed with its vote and re-ranker, when either takes part; else None."""
        return self.composed()

    def composed(self: Any, use_neighbours: bool = True) -> Optional[VotedNetwork]:
        """This network composed with its vote (unless `use_neighbours` is false), re-ranker and
        label tree, those that take part (present, with a positive weight, or for the vote, beside a
        re-ranker that takes part; the vote not under MPI, where no rank holds every training point
        or the whole output layer the vote's labels need); None when none does."""
        reranks = self.reranker is not None and self.rerank_weight > 0
        trees = self.tree is not None and (self.tree_weight > 0 or (self.reranker is None and self.rerank_weight > 0))
        # At vote weight 0 the neighbours' labels still join the candidates the re-ranker (or tree) scores, as
        # they did when `tune_fusion_weights` scored that weight. Dropping them there predicted
        # something other than what was picked: debian-deps-by-source, weight 0 picked, test P@5
        # 0.3154 without them, 0.3203 with them (by script, one network).
        votes = use_neighbours and self._can_vote() and (self.neighbour_weight > 0 or reranks or trees)
        if not (votes or reranks or trees):
            return None
        return VotedNetwork(self, self.memory if votes else None, self.neighbours,
                            self.reranker if reranks else None, self.tree if trees else None)

    def fit_fusion(self: Any, X, Y: Optional[LabelsLike] = None, validation: Optional[tuple] = None, *,
                   monitor: Optional[str] = None, mode: str = "dense", progress: bool = False
                   ) -> Optional[dict[tuple[float, float], float]]:
        """What `fit` and `slide train` do after the last epoch: X, Y (the training points in
        memory) become the vote's memory (``neighbours`` > 0) and train the re-ranker (``rerank``
        > 0); with a `validation` pair, the weights that fuse them are picked on it, by `monitor`
        (None: `FUSION_MONITOR`, nDCG@5, not the metric that picks the epoch). X may be a
        `slide.datasets.Stream` (Y omitted): it trains the re-ranker shard by shard, and there is
        no vote (it needs the points in memory); the label tree trains on a stream of one shard,
        which holds every point at once, and is left out of a stream of several. `progress`
        shows the re-ranker's shortlists being scanned. Returns every weight pair's validation
        score, or None when nothing was tuned."""
        streamed = Y is None and isinstance(X, Stream)
        if self.neighbours and streamed:
            log.info("training points in a stream: no nearest-neighbour vote (it needs them in memory)")
            self.memory = None
        elif self.neighbours and self.comm is not None:
            log.info("under MPI: no nearest-neighbour vote (it needs every training point in one process)")
            self.memory = None
        elif self.neighbours:
            self.remember(X, Y)
        points = _every_point(X, Y) if self.label_tree and self.comm is None else None
        if self.label_tree and self.comm is not None:
            log.info("under MPI: no label tree (it needs every training point in one process)")
            self.tree = None
        elif self.label_tree and points is None:
            log.info("training points in a stream of %d shards: no label tree (it needs every point at once, which "
                     "only a stream of one shard holds)", len(X.folder))
            self.tree = None
        elif self.label_tree:
            self.fit_label_tree(*points)
        tunes = validation is not None and monitor != "loss"
        reranks = self.rerank and not (self.tree is not None and _few_points_a_label(self, *points))
        if not reranks and self.rerank:
            log.info("labels with fewer than %g training points each on average: the label tree's own classifiers "
                     "re-score the candidates, and no re-ranker is trained", TREE_RESCORES_BELOW)
            self.reranker = None
        if reranks and tunes and not streamed and self.comm is None:
            return self._fit_reranker_and_weights(X, Y, validation, monitor, mode, progress)
        if reranks:
            self.fit_reranker(X, Y, progress=progress)
        if not tunes or (self.memory is None and self.reranker is None and self.tree is None):
            return None
        return self.tune_fusion_weights(*validation, monitor=monitor, mode=mode)

    @one_call_at_a_time
    def _fit_reranker_and_weights(self: Any, X, Y: LabelsLike, validation: tuple, monitor: Optional[str], mode: str,
                                  progress: bool) -> dict[tuple[float, float], float]:
        """`fit_reranker` at each C the training lists call for (`rerankers_over_c`: one or two),
        and the fusion weights with each, on the validation pair: keeps the re-ranker and weights
        that score best there (the first C's unless the other's is strictly better)."""
        t0 = time.perf_counter()
        X = as_features(X, self.input_dim)
        solved = rerankers_over_c(self, X, as_labels(Y, self.output_dim, X.shape[0]), progress)
        self.reranker = next(solved)
        scores = _tune(self, *validation, monitor, mode, WEIGHTS if self._can_vote() else (0.0,), RERANK_WEIGHTS,
                       self.memory if self._can_vote() else None, rerankers=solved, tree_weights=self._tree_weights())
        log.info("re-ranker: C %g kept (each C solved is logged above), %.1fs for the re-rankers and weights",
                 self.reranker.hinge_c, time.perf_counter() - t0)
        return scores

    @one_call_at_a_time
    def fit_label_tree(self: Any, X, Y: Optional[LabelsLike] = None) -> Any:
        """Train the label tree (`slide.label_tree`), ``label_trees`` of them averaged, on X, Y, the
        network's training points in memory, with at most ``label_tree`` labels a leaf
        (`slide.label_tree.LEAF_SIZE`, the preset's, when ``label_tree`` is 0), replacing any
        trained before; `fit` calls it after the network's last
        epoch when ``label_tree`` > 0. X may be a `slide.datasets.Stream` of one shard (Y
        omitted), which holds every point at once. One process only. Returns self."""
        if self.comm is not None:
            raise ValueError("the label tree needs every training point in one process; under MPI each rank holds "
                             "a share of them")
        points = _every_point(X, Y)
        if points is None:
            raise ValueError(f"the label tree needs every training point at once: a Stream of one shard holds "
                             f"them, this one has {len(X.folder)} shards")
        X, Y = points
        X = as_features(X, self.input_dim)
        t0 = time.perf_counter()
        self.tree = LabelForest.fit(X, as_labels(Y, self.output_dim, X.shape[0]), trees=self.label_trees,
                                    leaf_size=self.label_tree or LEAF_SIZE, threads=self.threads, seed=self.seed)
        log.info("label trees: %d, %d nodes, %d weights, in %.1fs", len(self.tree.trees), self.tree.nodes,
                 self.tree.weights, time.perf_counter() - t0)
        return self

    def remember(self: Any, X, Y: LabelsLike) -> Any:
        """Keep X, Y as the training points whose labels vote in predictions (replacing any kept
        before); `fit` calls it with its training data when ``neighbours`` > 0. Returns self."""
        if self.comm is not None:
            raise ValueError("the neighbours' vote needs every training point in one process; under MPI each rank "
                             "holds a share of them (the re-ranker, rerank > 0, trains over ranks instead)")
        X = as_features(X, self.input_dim)
        self.memory = NeighbourMemory(X, as_labels(Y, self.output_dim, X.shape[0]))
        return self

    @one_call_at_a_time
    def fit_reranker(self: Any, X, Y: Optional[LabelsLike] = None, *, epochs: int = EPOCHS, c: Optional[float] = None,
                     progress: bool = False) -> list[float]:
        """Train the shortlist re-ranker (`slide.reranker`) on X, Y, the network's training data:
        each point's list is the network's top `slide.reranker.HINGE_SHORTLIST_FACTOR` x
        ``rerank`` labels and its own, and each label's squared hinge over the points whose list
        holds it is solved at `c` (`ShortlistReranker.fit_hinge`; `epochs` unused), by default the C
        such lists call for (the first of `slide.reranker.hinge_cs` for their points per label). X
        may be a `slide.datasets.Stream` (Y omitted): of one shard, it is solved so too; of
        several, which never hold a label's every point at once, it is read shard by shard for
        `epochs` Adagrad passes on lists ``rerank`` wide (`c` unused). `fit` calls it after the
        network's last epoch when ``rerank`` > 0 (with held-out points in one process, also at the
        other C the lists may call for, keeping the one that fuses better on them).
        `progress` shows the scan for the training points' shortlists (in memory, one process).
        Returns each epoch's or round's mean loss.

        Under MPI (a network built with ``comm``) every rank calls it with its own share of the
        points, in memory: in each of `slide.prediction.reranker_training.HINGE_ROUNDS` rounds
        every rank solves its share and all add up the ranks' changes, so every rank holds the same
        re-ranker. Collective."""
        if not self.rerank:
            raise ValueError("fit_reranker needs rerank > 0 (the shortlist each point is re-ranked on)")
        if self.comm is not None and isinstance(X, Stream):
            raise ValueError("under MPI the re-ranker trains on each rank's share of the points in memory, not on a "
                             "Stream")
        check_int("epochs", epochs, 1)
        if c is not None:
            check_c(c)
        t0 = time.perf_counter()
        streamed = isinstance(X, Stream)
        if streamed:
            if Y is not None:
                raise ValueError("a Stream holds its labels: call fit_reranker(stream) without Y")
            self.reranker, losses = reranker_from_stream(self, X, epochs, c)
            points, shards = X.samples_per_epoch, len(X.folder)
        else:
            if Y is None:
                raise ValueError("fit_reranker needs Y, or a slide.datasets.Stream as X")
            X = as_features(X, self.input_dim)
            self.reranker, losses = reranker_from_memory(self, X, as_labels(Y, self.output_dim, X.shape[0]), progress,
                                                         c)
            points, shards = X.shape[0], 1
        if self.comm is not None:
            points = int(self.comm.total(points))
        solver, listed = training_lists(self, in_memory=not streamed, shards=shards)
        log.info("re-ranker: %s on %d points' lists of %d (re-scoring %d) in %.1fs, losses %s",
                 f"{epochs} {solver}" if solver == ADAGRAD else solver, points, listed, self.reranker.shortlist,
                 time.perf_counter() - t0, losses)
        return losses

    @property
    def representation(self: Any) -> Representation:
        """The top hidden layer as the vote's hidden space (``neighbour_space``): what `transform`
        gives, keyed by the optimizer's step count and the parameters put back since (a best epoch,
        an epoch mean), so the memory recomputes its points' activations only once the weights have
        changed. Weights written by hand through `weights()` need `remember` again."""
        return Representation(self.transform, (self._core.counters()["step"], self.parameter_writes))

    def _rescores(self: Any) -> bool:
        """Whether per-label classifiers re-score the candidates: the re-ranker's, or the tree's."""
        return self.reranker is not None or self.tree is not None

    def _tree_weights(self: Any) -> tuple[float, ...]:
        return TREE_WEIGHTS if self.tree is not None else (0.0,)

    def _can_vote(self: Any) -> bool:
        return bool(self.neighbours) and self.memory is not None and self.comm is None

    @one_call_at_a_time
    def tune_neighbour_weight(self: Any, X, Y: LabelsLike, *, monitor: Optional[str] = None, mode: str = "dense"
                              ) -> dict[float, float]:
        """Set ``neighbour_weight`` to the weight in `slide.neighbours.WEIGHTS` with the best
        `monitor` (None: `FUSION_MONITOR`) on X, Y (validation data, not training data), each
        weight judged with its neighbours on the grid (`slide.prediction.weight_grid`); returns
        every weight's own score."""
        if not self._can_vote():
            raise ValueError("tune_neighbour_weight needs neighbours > 0 and a memory (fit, or remember(X, Y)), "
                             "in one process")
        rerank = (self.rerank_weight,) if self._rescores() else (0.0,)
        tree = (self.tree_weight,) if self.tree is not None else (0.0,)
        scores = _tune(self, X, Y, monitor, mode, WEIGHTS, rerank, self.memory, tree_weights=tree, learn=False)
        return {w: score for (w, _), score in scores.items()}

    @one_call_at_a_time
    def tune_fusion_weights(self: Any, X, Y: LabelsLike, *, monitor: Optional[str] = None, mode: str = "dense"
                            ) -> dict[tuple[float, float], float]:
        """Set ``neighbour_weight``, ``rerank_weight`` and ``tree_weight`` to the weights (from
        `slide.neighbours.WEIGHTS`, `slide.reranker.WEIGHTS` and `TREE_WEIGHTS`) with the best
        `monitor` (None: `FUSION_MONITOR`) on X, Y (validation data), each triple judged with its
        neighbours on the grid (`slide.prediction.weight_grid`), or, with ``fusion_weights``
        "auto", to the weights a logistic regression learns on the candidates where those do
        better over two halves of X, Y (`slide.prediction.learned_weights`; one process;
        ``weight_choice`` says which and how each scored); returns every (vote, re-ranker) pair's
        own score at the grid's tree weight. Only the weights of the parts the network has are
        tuned."""
        votes = self._can_vote()
        if not votes and not self._rescores():
            raise ValueError("tune_fusion_weights needs a memory (neighbours > 0), a re-ranker (rerank > 0) or a "
                             "label tree (label_tree > 0)")
        return _tune(self, X, Y, monitor, mode, WEIGHTS if votes else (0.0,),
                     RERANK_WEIGHTS if self._rescores() else (0.0,), self.memory if votes else None,
                     tree_weights=self._tree_weights())


def _tune(net: Any, X, Y: LabelsLike, monitor: Optional[str], mode: str, weights: tuple, rerank_weights: tuple,
          memory: Optional[NeighbourMemory], rerankers: Iterable[ShortlistReranker] = (),
          tree_weights: tuple = (0.0,), learn: bool = True) -> dict[tuple[float, float], float]:
    ks = net._ranks(None)
    monitor = fusion_monitor(ks) if monitor is None else monitor
    check_monitor(monitor, ks)
    if monitor == "loss":
        raise ValueError("the fusion weights are picked by a ranking metric (P@k or nDCG@k), not loss")
    check_scoring(mode)
    X = as_features(X, net.input_dim)
    Yc = as_labels(Y, net.output_dim, X.shape[0])
    composed = VotedNetwork(net, memory, net.neighbours, net.reranker, net.tree)
    net.reranker, (weight, rerank_weight), scores, tree_weight, net.weight_choice = composed.best_weights(
        X, Yc, ks, monitor, mode == "dense", weights, rerank_weights, rerankers, tree_weights,
        learn=net.seed if learn and net.fusion_weights == "auto" else None)
    if memory is not None:
        net.neighbour_weight = weight
    if net._rescores():
        net.rerank_weight = rerank_weight
    if net.tree is not None:
        net.tree_weight = tree_weight
    log.info("fusion weights: vote %g, re-ranker %g, tree %g: validation %s %s", weight, rerank_weight, tree_weight,
             monitor, {f"{w:g}/{r:g}": round(s, 4) for (w, r), s in scores.items()})
    choice = net.weight_choice
    if choice is not None:
        learned = "unavailable" if choice.learned_score is None else f"{choice.learned_score:.4f}"
        log.info("fusion weights %s: on each half of the validation points, picked on the other, %s %.4f by the "
                 "grid, %s learned (the grid's pick on them all: vote %g, re-ranker %g, tree %g)",
                 "learned by logistic regression" if choice.learned else "from the grid", monitor,
                 choice.grid_score, learned, *choice.grid)
    return scores

