"""The nearest-neighbour vote: a memory of the training points whose labels vote for a query's, fused
with the network's scores.

A network with a 128-unit bottleneck cannot remember which few words identify each of 670,091
labels when most labels have one or two training points; the points themselves can. So a query's
k most cosine-similar training points vote for their labels (vote_l = sum of similarities of the
neighbours that carry l, over k, in [0, 1]) and the network's logit is fused with the vote:

    score_l = logit_l + weight * vote_l

a product of experts (softmax(logits) times exp(weight * vote)). Only labels some neighbour
carries get a vote, so the exact top-k of the fused score is among the network's top-k and the
voted labels: fusion is exact, not a re-ranking of a shortlist. PfastreXML fuses its trees with a
tail-label classifier the same way, and DECAF / SiameseXML fuse their classifiers with
nearest-neighbour shortlists.

The weight is picked on validation data from WEIGHTS (`pick_weights` scores each, and each is
judged with its neighbours on the grid, `slide.prediction.weight_grid`): how much the vote should
count depends on how well the network alone ranks, which differs by orders of magnitude between
datasets (benches/neighbours.py). The points are near in the input space (cosine of the features,
cpp/neighbours/neighbour_votes.cpp), in the network's top hidden layer (cosine of the activations,
cpp/neighbours/dense_neighbour_votes.cpp) or both, the two votes averaged (the network setting
`neighbour_space`; docs/how-it-works.md has what each gave on the real suite). Both searches are exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Optional

import numpy as np
import scipy.sparse as sp

from ._core import dense_neighbour_votes, fused_top_k, neighbour_votes
from .datasets.synthetic import unit_rows
from .metrics import hit_report, label_keys, pair_keys, point_metric
from .settings import NETWORK

# Fusion weights `pick_weights` tries; 0 adds no vote (beside a re-ranker the neighbours' labels
# are still among the candidates it scores, slide.prediction.methods.composed).
WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)


@dataclass(frozen=True)
class Representation:
    """A network's top hidden layer as the vote's second space (`NeighbourMemory.votes`): `of(X)`
    gives its activations for the rows of X, and `version` changes whenever the network has trained
    since, so that the memory computes its points' activations again only then."""
    of: Callable[[sp.csr_matrix], np.ndarray]
    version: Hashable


def _unit_dense(H: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(H, axis=1, keepdims=True)
    return np.ascontiguousarray(H / np.where(norms > 0, norms, 1.0), dtype=np.float32)


class NeighbourMemory:
    """The training points (unit rows) and their labels, searched exactly by cosine similarity, in
    the input space and, given a network's `Representation`, in its top hidden layer."""

    def __init__(self, X: sp.csr_matrix, Y: sp.csr_matrix, *, rows_are_unit: bool = False) -> None:
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"the memory needs one label row per point: {X.shape[0]} points, {Y.shape[0]} label rows")
        self.points = sp.csr_matrix(X, dtype=np.float32) if rows_are_unit else unit_rows(X)
        self.labels = sp.csr_matrix(Y, dtype=np.float32, copy=True)
        self.labels.sum_duplicates()  # sorted, unique labels per point, as the engine expects
        self.labels.data[:] = 1.0
        self._by_feature = self.points.T.tocsr()
        self._hidden: Optional[tuple[Hashable, np.ndarray]] = None  # (version, unit rows) of a Representation

    def __len__(self) -> int:
        return self.points.shape[0]

    def votes(self, X: sp.csr_matrix, k: int, threads: int = 1, *, space: str = "input",
              representation: Optional[Representation] = None) -> sp.csr_matrix:
        """(queries, labels) CSR: each label's vote, the similarity of the k nearest training
        points that carry it, summed, over k. `space` says where the points are near (the setting
        `neighbour_space`): "input" (the cosine of the features; the engine's search touches only
        the points that share a feature with a query), "hidden" (the cosine of `representation`'s
        activations, for which X and the points are L2-normalised first; every point is compared)
        or "both" (the two votes averaged). On `threads` threads."""
        if space not in NETWORK["neighbour_space"].choices:
            raise ValueError(f"space must be one of {', '.join(NETWORK['neighbour_space'].choices)}, got {space!r}")
        if space != "input" and representation is None:
            raise ValueError(f"the {space} space needs the network's representation")
        Q = unit_rows(X)
        k = min(int(k), len(self))
        if k == 0 or Q.shape[0] == 0:
            return sp.csr_matrix((Q.shape[0], self.labels.shape[1]), dtype=np.float32)
        threads = max(1, int(threads))
        if space == "input":
            return self._input_votes(Q, k, threads)
        hidden = self._hidden_votes(Q, k, threads, representation)
        if space == "hidden":
            return hidden
        return ((self._input_votes(Q, k, threads) + hidden) * np.float32(0.5)).tocsr()

    def _input_votes(self, Q: sp.csr_matrix, k: int, threads: int) -> sp.csr_matrix:
        f, lab = self._by_feature, self.labels
        indptr, labels, votes = neighbour_votes(
            Q.indptr.astype(np.int64, copy=False), Q.indices.astype(np.int32, copy=False),
            Q.data.astype(np.float32, copy=False), f.indptr.astype(np.int64, copy=False),
            f.indices.astype(np.int32, copy=False), f.data, lab.indptr.astype(np.int64, copy=False),
            lab.indices.astype(np.int32, copy=False), Q.shape[1], lab.shape[1], k, threads)
        return sp.csr_matrix((votes, labels, indptr), shape=(Q.shape[0], lab.shape[1]))

    def _hidden_votes(self, Q: sp.csr_matrix, k: int, threads: int, representation: Representation) -> sp.csr_matrix:
        if self._hidden is None or self._hidden[0] != representation.version:
            self._hidden = (representation.version, _unit_dense(representation.of(self.points)))
        lab = self.labels
        indptr, labels, votes = dense_neighbour_votes(
            _unit_dense(representation.of(Q)), self._hidden[1], lab.indptr.astype(np.int64, copy=False),
            lab.indices.astype(np.int32, copy=False), lab.shape[1], k, threads)
        return sp.csr_matrix((votes, labels, indptr), shape=(Q.shape[0], lab.shape[1]))

    def extended(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> "NeighbourMemory":
        """A memory of these points followed by X, Y (only the new rows are normalised)."""
        return NeighbourMemory(sp.vstack([self.points, unit_rows(X)]).tocsr(), sp.vstack([self.labels, Y]).tocsr(),
                               rows_are_unit=True)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"neighbours.points.indptr": self.points.indptr.astype(np.int64),
                "neighbours.points.indices": self.points.indices.astype(np.int32),
                "neighbours.points.data": self.points.data,
                "neighbours.labels.indptr": self.labels.indptr.astype(np.int64),
                "neighbours.labels.indices": self.labels.indices.astype(np.int32)}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], n_features: int, n_labels: int) -> "NeighbourMemory":
        """Rebuild from `to_arrays`'s output. The arrays come from a file: their CSR structure is
        checked here, in full, before scipy's compiled routines (which trust it) ever see them."""
        indptr, indices = a["neighbours.points.indptr"], a["neighbours.points.indices"]
        rows = len(indptr) - 1
        _check_csr("neighbours.points", indptr, indices, rows, n_features)
        _check_csr("neighbours.labels", a["neighbours.labels.indptr"], a["neighbours.labels.indices"], rows, n_labels)
        data = a["neighbours.points.data"]
        if data.shape != indices.shape or not np.all(np.isfinite(data)):
            raise ValueError(f"neighbours.points.data holds {data.size} values for {indices.size} ids, or a NaN/inf")
        X = sp.csr_matrix((data, indices, indptr), shape=(rows, n_features))
        li = a["neighbours.labels.indices"]
        Y = sp.csr_matrix((np.ones(li.size, np.float32), li, a["neighbours.labels.indptr"]), shape=(rows, n_labels))
        return cls(X, Y, rows_are_unit=True)  # as saved: normalising again could move the last bit


def _check_csr(name: str, indptr: np.ndarray, indices: np.ndarray, rows: int, dim: int) -> None:
    """ValueError naming `name` unless indptr/indices are a CSR structure of `rows` rows over [0, dim)."""
    if indptr.ndim != 1 or indices.ndim != 1 or len(indptr) != rows + 1 or rows < 0:
        raise ValueError(f"{name}: {len(indptr)} row offsets for {rows} rows")
    if indptr[0] != 0 or indptr[-1] != len(indices) or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name}: the row offsets must rise from 0 to the {len(indices)} ids stored")
    if len(indices) and (indices.min() < 0 or indices.max() >= dim):
        raise ValueError(f"{name}: an id lies outside [0, {dim})")


LogitsOf = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (query rows, label ids) -> logits


class Fusion:
    """One batch of queries, scored once: the network's top-k, the votes, the logits of the voted
    labels and the re-ranker's scores of every candidate; `top(weight, k, rerank_weight)` then
    ranks by logit + weight * vote + rerank_weight * re-ranker score for any weights."""

    def __init__(self, ids: np.ndarray, logits: np.ndarray, votes: sp.csr_matrix, logits_of: Optional[LogitsOf],
                 rerank_of: Optional[LogitsOf] = None, tree_of: Optional[LogitsOf] = None) -> None:
        n, k = ids.shape
        rows = np.repeat(np.arange(n), k)
        keep = ids.ravel() >= 0
        voted_rows = np.repeat(np.arange(n), np.diff(votes.indptr))
        voted_logits = logits_of(voted_rows, votes.indices) if votes.nnz else np.zeros(0, np.float32)
        # Network-only entries whose label also got a vote are dropped: the voted copy has its logit.
        only_net = ~np.isin(pair_keys(rows[keep], ids.ravel()[keep]), pair_keys(voted_rows, votes.indices))
        self.n = n
        self.rows = np.concatenate([rows[keep][only_net], voted_rows])
        self.ids = np.concatenate([ids.ravel()[keep][only_net], votes.indices]).astype(np.int32)
        self.logits = np.concatenate([logits.ravel()[keep][only_net], voted_logits]).astype(np.float32)
        self.vote = np.concatenate([np.zeros(int(only_net.sum()), np.float32), votes.data.astype(np.float32)])
        self.rerank = np.zeros(self.ids.size, np.float32) if rerank_of is None else \
            rerank_of(self.rows, self.ids).astype(np.float32)
        self.tree = np.zeros(self.ids.size, np.float32) if tree_of is None else \
            tree_of(self.rows, self.ids).astype(np.float32)
        # Each query's candidates side by side, in the order above, so that `top` ranks them for
        # every weight pair (tuning tries dozens) without grouping them again.
        grouped = np.argsort(self.rows, kind="stable")
        for name in ("rows", "ids", "logits", "vote", "rerank", "tree"):
            setattr(self, name, getattr(self, name)[grouped])
        self._group(np.bincount(self.rows, minlength=n).astype(np.int64))

    def _group(self, counts: np.ndarray) -> None:
        """Each query's candidates lie side by side: `counts` of them from `_starts`."""
        self._counts, self._starts = counts, np.cumsum(counts) - counts

    def queries_that_can_score(self, Y: sp.csr_matrix
                               ) -> tuple["Fusion", sp.csr_matrix, np.ndarray, np.ndarray]:
        """(this fusion, Y, whether each candidate is one of its query's labels), cut to the
        queries with at least one of their labels among their candidates, and which queries those
        are (bool [n]): the others score 0 at every k under any weights, so a weight's mean over
        every query is its mean over these times their share (`pick_weights` scores only these; on
        debian-rdeps' held-out points, 60%)."""
        relevant, useful = self.labelled(Y)
        return self.queries(useful), sp.csr_matrix(Y)[useful], relevant[useful[self.rows]], useful

    def labelled(self, Y: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """(whether each candidate is one of its query's labels in Y, whether each query has one)."""
        relevant = np.isin(pair_keys(self.rows, self.ids), label_keys(Y))
        useful = np.zeros(self.n, bool)
        useful[self.rows[relevant]] = True
        return relevant, useful

    def queries(self, chosen: np.ndarray) -> "Fusion":
        """This fusion cut to the queries where `chosen` (bool [n]) holds, in their order."""
        kept = chosen[self.rows]
        cut = object.__new__(Fusion)
        cut.n = int(chosen.sum())
        cut.rows = (np.cumsum(chosen) - 1)[self.rows[kept]]
        for name in ("ids", "logits", "vote", "rerank", "tree"):
            setattr(cut, name, getattr(self, name)[kept])
        cut._group(self._counts[chosen])
        return cut

    def rescore(self, rerank_of: LogitsOf) -> None:
        """The re-ranker's scores of every candidate again, from another re-ranker."""
        self.rerank = rerank_of(self.rows, self.ids).astype(np.float32)

    def _boost(self, weight: float, rerank_weight: float, tree_weight: float = 0.0) -> np.ndarray:
        return np.float32(weight) * self.vote + np.float32(rerank_weight) * self.rerank + \
            np.float32(tree_weight) * self.tree

    def log_normalizer(self, weight: float, network_log_normalizer: np.ndarray, rerank_weight: float = 0.0,
                       tree_weight: float = 0.0) -> np.ndarray:
        """log of sum_l exp(logit_l + boost_l) over every output, per query, where boost_l is
        weight * vote_l + rerank_weight * rerank_l + tree_weight * tree_l on the candidates and 0
        elsewhere: the network's normaliser with the candidates' terms scaled by exp(boost)."""
        boost = self._boost(weight, rerank_weight, tree_weight)
        boosted = boost != 0
        rows = self.rows[boosted]
        log_p = self.logits[boosted].astype(np.float64) - network_log_normalizer[rows]
        p_boosted = np.bincount(rows, weights=np.exp(log_p), minlength=self.n)
        rest = np.log(np.maximum(1.0 - p_boosted, 1e-300))  # the other labels keep their probability
        lifted = log_p + boost[boosted]
        peak = rest.copy()
        np.maximum.at(peak, rows, lifted)
        total = np.exp(rest - peak) + np.bincount(rows, weights=np.exp(lifted - peak[rows]), minlength=self.n)
        return (network_log_normalizer + peak + np.log(total)).astype(np.float32)

    def top(self, weight: float, k: int, rerank_weight: float = 0.0, tree_weight: float = 0.0
            ) -> tuple[np.ndarray, np.ndarray]:
        """(ids int32 [n, k], fused scores float32 [n, k]), best first, ties in the candidates'
        order (the network's before the voted); -1 / -inf where a query has fewer than k
        candidates. One pass over the candidates in the engine (cpp/prediction/fused_top_k.cpp):
        sorting them for each weight pair took most of tuning's time."""
        return self._ranked(self.ids, weight, k, rerank_weight, tree_weight)

    def top_positions(self, weight: float, k: int, rerank_weight: float = 0.0, tree_weight: float = 0.0
                      ) -> np.ndarray:
        """int32 [n, k]: `top`'s ranking as each label's position among the candidates (-1 for
        none), for scoring it against what is known of each candidate (`pick_weights`)."""
        return self._ranked(np.arange(self.ids.size, dtype=np.int32), weight, k, rerank_weight, tree_weight)[0]

    def _ranked(self, ids: np.ndarray, weight: float, k: int, rerank_weight: float, tree_weight: float
                ) -> tuple[np.ndarray, np.ndarray]:
        logits = self.logits + np.float32(tree_weight) * self.tree if tree_weight else self.logits
        return fused_top_k(self._starts, self._counts, ids, logits, self.vote, self.rerank,
                           float(weight), float(rerank_weight), int(k))


def pick_weights(fusion: Fusion, Y: sp.csr_matrix, ks: tuple[int, ...], monitor: str = "P@1",
                 weights: tuple[float, ...] = WEIGHTS, rerank_weights: tuple[float, ...] = (0.0,),
                 combine: Optional[Callable[[dict], dict]] = None, tree_weight: float = 0.0
                 ) -> tuple[tuple[float, float], dict[tuple[float, float], float]]:
    """The (vote weight, re-ranker weight) pair with the best `monitor` on (fusion's queries, Y),
    at `tree_weight`; ties go to the smaller weights. Returns it and every pair's score. `combine`
    turns the queries' report into the one judged (under MPI: the mean over every rank's queries)."""
    every = fusion.n
    fusion, Y, relevant, _ = fusion.queries_that_can_score(Y)
    share = fusion.n / max(1, every)
    scores = {}
    for w in weights:
        for rw in rerank_weights:
            at = fusion.top_positions(w, max(ks), rw, tree_weight)
            hits = (at >= 0) & relevant[np.maximum(at, 0)]
            report = {name: value * share for name, value in hit_report(hits, Y, ks).items()}
            scores[(w, rw)] = float((combine(report) if combine is not None else report)[monitor])
    best = max(scores, key=lambda pair: (scores[pair], -pair[0], -pair[1]))
    return best, scores


def point_scores(fusion: Fusion, Y: sp.csr_matrix, ks: tuple[int, ...], monitor: str, weights: tuple[float, ...],
                 rerank_weights: tuple[float, ...], tree_weights: tuple[float, ...]) -> np.ndarray:
    """float64 [tree, vote, re-ranker, query]: each query's `monitor` (P@k or nDCG@k) at every
    (vote, re-ranker, tree) weight triple, 0 for the queries with none of their labels among their
    candidates (one process). At one tree weight, `pick_weights`' scores are the means over the
    queries; the means over a subset of them pick on that subset alone (`learned_weights`)."""
    out = np.zeros((len(tree_weights), len(weights), len(rerank_weights), fusion.n))
    cut, Y, relevant, useful = fusion.queries_that_can_score(Y)
    for t, tree_weight in enumerate(tree_weights):
        for i, w in enumerate(weights):
            for j, rw in enumerate(rerank_weights):
                at = cut.top_positions(w, max(ks), rw, tree_weight)
                out[t, i, j, useful] = point_metric((at >= 0) & relevant[np.maximum(at, 0)], Y, monitor)
    return out
