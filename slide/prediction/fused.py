"""A network composed with what re-scores its shortlist: the labels of each query's nearest
training points (the vote, `slide.neighbours`), per-label linear classifiers (the re-ranker,
`slide.reranker`) and a label tree (`slide.label_tree`, whose beam adds candidates too), fused as
logit + weight x vote + rerank_weight x re-ranker score + tree_weight x the tree's log-probability."""

from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np
import scipy.sparse as sp

from ..label_tree import LabelForest
from ..metrics import pair_keys
from ..neighbours import Fusion, NeighbourMemory, point_scores
from ..reranker import OUTSIDE_SCORE, ShortlistReranker
from .learned_weights import WeightChoice, learned_or_grid
from .weight_grid import grid_pick, pick_on_grid

# Pairs whose logits are computed at once for the voted labels: each gathered block (1 KB a pair
# at hidden 256) stays below the 4 MiB from which NumPy asks for huge pages, and small blocks are
# reused by the allocator rather than mapped afresh; a new huge page's first touch cost more than
# the products here (800,000 random pairs at hidden 256: 0.39 s in chunks of 2^16, 0.18 s in
# chunks of 2^12 or 2^10; by script on the suite's host).
_CHUNK = 1 << 11
# Each tree's beam's best labels that join each query's candidates. On debian-rdeps (slide's fused
# top 25, by script) the union with the tree's top 25 scored 0.228 / 0.110 P@1 / P@5 at tree weight
# 1, where slide's own 25 re-scored by the tree gave less (0.2225-0.2246 / 0.1074-0.1079 with
# omikuji's tree): the tree finds labels the network ranks low.
TREE_CANDIDATES = 25


class KnownPairs:
    """The (row of X, label) pairs a re-ranker trained on lists like: each row's network top
    `trained_on` (`known`, -1 for none). `scorer(reranker)` scores pairs by it."""

    def __init__(self, X: sp.csr_matrix, known: np.ndarray, threads: int) -> None:
        known_rows = np.repeat(np.arange(known.shape[0]), known.shape[1])
        listed = known.ravel() >= 0
        self.X, self.threads = X, threads
        self.keys = np.sort(pair_keys(known_rows[listed], known.ravel()[listed]))

    def scorer(self, reranker: ShortlistReranker):
        """(rows, labels) -> the re-ranker's scores of those pairs where they are known,
        OUTSIDE_SCORE elsewhere (slide.reranker)."""
        known_keys = self.keys

        def rerank_of(rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
            keys = pair_keys(rows, labels)
            # np.isin hashes both sides: 1.1 s on debian-deps' test set, this 0.1 s
            at = np.minimum(np.searchsorted(known_keys, keys), max(known_keys.size - 1, 0))
            inside = known_keys[at] == keys if known_keys.size else np.zeros(keys.size, bool)
            out = np.full(rows.size, OUTSIDE_SCORE, np.float32)
            out[inside] = reranker.scores(self.X, rows[inside], labels[inside], self.threads)
            return out
        return rerank_of


class VotedNetwork:
    """`net`'s scores, plus the vote of the `neighbours` nearest points of `memory` (when there
    is one), plus the re-ranker's scores on the network's top `reranker.shortlist` (when there is one)."""

    def __init__(self, net: Any, memory: Optional[NeighbourMemory], neighbours: int,
                 reranker: Optional[ShortlistReranker] = None, tree: Optional[LabelForest] = None) -> None:
        self.net, self.memory, self.neighbours, self.reranker, self.tree = net, memory, neighbours, reranker, tree

    def fusion(self, X: sp.csr_matrix, k: int, dense: bool, normaliser: bool = False
               ) -> tuple[Fusion, Optional[np.ndarray]]:
        """The network's top-k (its top `shortlist`, with a re-ranker), the neighbours' votes and
        the re-ranker's scores for X, ready to rank at any weights; and, with `normaliser` (dense
        only), the network's log-normaliser per sample, which only probabilities need: it costs an
        exp per output and sample, more than the scores."""
        fusion, log_normalizer, _ = self._fusion(X, k, dense, normaliser)
        return fusion, log_normalizer

    def _fusion(self, X: sp.csr_matrix, k: int, dense: bool, normaliser: bool = False
                ) -> tuple[Fusion, Optional[np.ndarray], Optional[KnownPairs]]:
        """`fusion`'s, and the pairs the re-ranker knows (None without one)."""
        net, threads, reranker = self.net, self.net.threads, self.reranker
        if reranker is not None or self.tree is not None:  # the network's shortlist, as wide as the tree's
            k = min(max(k, reranker.shortlist if reranker is not None else TREE_CANDIDATES), net.output_dim)
        # With the vote, the network's top `trained_on` say which voted labels the re-ranker knows.
        ranked = k if reranker is None or self.memory is None else max(k, min(reranker.trained_on, net.output_dim))
        # Through the network's strategy: under MPI each rank holds a block of the output layer,
        # and the whole layer's top k of this rank's rows comes from every rank (collective).
        if dense and normaliser:
            ids, logits, log_normalizer = net.ranks.top_k(net, X, ranked, True, normaliser=True)
        else:  # ranking needs no normaliser, and LSH inference has no exact one
            (ids, logits), log_normalizer = net.ranks.top_k(net, X, ranked, dense), None
        votes = self.memory.votes(X, self.neighbours, threads, space=net.neighbour_space,
                                  representation=net.representation) if self.memory is not None else \
            sp.csr_matrix((X.shape[0], self.net.output_dim), dtype=np.float32)
        tree_of = None
        if self.tree is not None:
            votes = with_candidates(votes, self.tree.candidates(X, TREE_CANDIDATES, threads=threads))
            tree_of = lambda rows, labels: self.tree.log_probabilities(X, rows, labels, threads=threads)  # noqa: E731
        known = None if reranker is None else KnownPairs(X, ids[:, :reranker.trained_on], threads)
        rerank_of = None if known is None else known.scorer(reranker)
        if rerank_of is None and self.tree is not None:  # the tree's own classifiers re-score in its place
            rerank_of = lambda rows, labels: self.tree.label_scores(X, rows, labels, threads=threads)  # noqa: E731
        return Fusion(ids[:, :k], logits[:, :k], votes, self._logits_of(X) if votes.nnz else None,
                      rerank_of, tree_of), log_normalizer, known

    def _logits_of(self, X: sp.csr_matrix):
        """(rows, labels) -> the network's logits of those pairs."""
        hidden = self.net._core.hidden(X.indptr, X.indices, X.data)
        state = self.net._core.state()
        top = len(self.net.hidden) - 1
        W, b = state[f"layers.{top}.weight"], state[f"layers.{top}.bias"]

        def logits_of(rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
            out = np.empty(rows.size, np.float32)
            for s in range(0, rows.size, _CHUNK):
                r, l = rows[s:s + _CHUNK], labels[s:s + _CHUNK]
                out[s:s + r.size] = np.einsum("ij,ij->i", hidden[r], W[l]) + b[l]
            return out
        return logits_of

    def top(self, X: sp.csr_matrix, k: int, dense: bool, weight: float, rerank_weight: float = 0.0,
            tree_weight: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(ids, fused scores) of the top k."""
        return self.fusion(X, k, dense)[0].top(weight, k, rerank_weight, tree_weight)

    def top_proba(self, X: sp.csr_matrix, k: int, weight: float, rerank_weight: float = 0.0, tree_weight: float = 0.0
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, probabilities) of the top k: softmax(logit + weight x vote + rerank_weight x
        re-ranker score + tree_weight x tree log-probability), the last two terms on the
        candidates only, normalised exactly."""
        fusion, log_normalizer = self.fusion(X, k, True, normaliser=True)
        ids, scores = fusion.top(weight, k, rerank_weight, tree_weight)
        norm = fusion.log_normalizer(weight, log_normalizer, rerank_weight, tree_weight)
        return ids, np.exp(scores - norm[:, None]).astype(np.float32)

    def best_weights(self, X: sp.csr_matrix, Y: sp.csr_matrix, ks: tuple[int, ...], monitor: str, dense: bool,
                     weights: tuple[float, ...], rerank_weights: tuple[float, ...],
                     rerankers: Iterable[ShortlistReranker] = (), tree_weights: tuple[float, ...] = (0.0,),
                     learn: Optional[int] = None
                     ) -> tuple[Optional[ShortlistReranker], tuple[float, float], dict[tuple[float, float], float],
                                float, Optional[WeightChoice]]:
        """(the re-ranker, the (vote weight, re-ranker weight) pair, that re-ranker's every pair's
        score at the tree weight picked, the tree weight, how the weights were chosen) with the best
        `monitor` on X, Y, each triple judged with its neighbours on the grid (`weight_grid.grid_pick`).
        `rerankers`, alternatives to this one trained on the same lists (another C), are each
        scored on the same candidates as they come and kept only while best; this one stays
        unless one does strictly better, and so do smaller tree weights. With `learn` (a seed; one
        process only) the weights learned on the candidates may replace the grid's triple
        (`learned_weights.learned_or_grid`, which says how it chose); else the choice is None."""
        fusion, _, known = self._fusion(X, max(ks), dense)
        # Under MPI each rank scores its own rows; every rank picks from the means over all of them.
        over_ranks = lambda report: self.net.ranks.mean(report, X.shape[0])  # noqa: E731
        learn = learn if self.net.comm is None and X.shape[0] > 1 else None
        grid = (sorted(weights), sorted(rerank_weights), sorted(tree_weights))
        best = None
        for reranker in (self.reranker, *rerankers):
            if reranker is not self.reranker:
                if known is None or (reranker.shortlist, reranker.trained_on) != (self.reranker.shortlist,
                                                                                self.reranker.trained_on):
                    raise ValueError("the re-rankers compared must re-score the same lists as the network's own")
                fusion.rescore(known.scorer(reranker))
            per_point = None
            if learn is None:
                tree_weight, pair, scores, judged = grid_pick(fusion, Y, ks, monitor, weights, rerank_weights,
                                                               tree_weights, over_ranks)
            else:  # each point's score at every triple: the halves `learned_or_grid` picks on are their means
                per_point = point_scores(fusion, Y, ks, monitor, *grid)
                tree_weight, pair, scores, judged = pick_on_grid(per_point.mean(axis=-1), grid)
            if best is None or judged > best[1]:
                best = ((reranker, pair, scores, tree_weight), judged, per_point, fusion.rerank)
        (reranker, pair, scores, tree_weight), _, per_point, fusion.rerank = best
        if learn is None:
            return reranker, pair, scores, tree_weight, None
        (weight, rerank_weight, tree_weight), choice = learned_or_grid(fusion, Y, ks, monitor, grid, per_point,
                                                                       (*pair, tree_weight), learn)
        return reranker, (weight, rerank_weight), scores, tree_weight, choice


def with_candidates(votes: sp.csr_matrix, ids: np.ndarray) -> sp.csr_matrix:
    """`votes` with each row's `ids` (-1 for none) it lacks added as explicit zeros, so that they
    join the candidates (`Fusion` computes the logits of every entry)."""
    rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
    listed = ids.ravel() >= 0
    coo = votes.tocoo()
    merged = sp.coo_matrix((np.concatenate([coo.data, np.zeros(int(listed.sum()), coo.data.dtype)]),
                            (np.concatenate([coo.row, rows[listed]]), np.concatenate([coo.col, ids.ravel()[listed]]))),
                           shape=votes.shape)
    return merged.tocsr()  # duplicates summed (vote + 0); the zeros stay stored
