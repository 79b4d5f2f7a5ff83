"""A network composed with what re-scores its shortlist: the labels of each query's nearest
training points (the vote, `slide.neighbours`) and per-label linear classifiers (the re-ranker,
`slide.reranker`), fused as logit + weight x vote + rerank_weight x re-ranker score."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..neighbours import Fusion, NeighbourMemory, pick_weights
from ..reranker import ShortlistReranker

_CHUNK = 1 << 16  # rows of logits computed at once for the voted labels


class VotedNetwork:
    """`net`'s scores, plus the vote of the `neighbours` nearest points of `memory` (when there
    is one), plus the re-ranker's scores on the network's top `reranker.shortlist` (when there is one)."""

    def __init__(self, net: Any, memory: Optional[NeighbourMemory], neighbours: int,
                 reranker: Optional[ShortlistReranker] = None) -> None:
        self.net, self.memory, self.neighbours, self.reranker = net, memory, neighbours, reranker

    def fusion(self, X: sp.csr_matrix, k: int, dense: bool, normaliser: bool = False
               ) -> tuple[Fusion, Optional[np.ndarray]]:
        """The network's top-k (its top `shortlist`, with a re-ranker), the neighbours' votes and
        the re-ranker's scores for X, ready to rank at any weights; and, with `normaliser` (dense
        only), the network's log-normaliser per sample, which only probabilities need: it costs an
        exp per output and sample, more than the scores."""
        net, threads = self.net, self.net.threads
        if self.reranker is not None:
            k = min(max(k, self.reranker.shortlist), net.output_dim)
        # Through the network's strategy: under MPI each rank holds a block of the output layer,
        # and the whole layer's top k of this rank's rows comes from every rank (collective).
        if dense and normaliser:
            ids, logits, log_normalizer = net.ranks.top_k(net, X, k, True, normaliser=True)
        else:  # ranking needs no normaliser, and LSH inference has no exact one
            (ids, logits), log_normalizer = net.ranks.top_k(net, X, k, dense), None
        votes = self.memory.votes(X, self.neighbours, threads) if self.memory is not None else \
            sp.csr_matrix((X.shape[0], self.net.output_dim), dtype=np.float32)
        rerank_of = None if self.reranker is None else \
            (lambda rows, labels: self.reranker.scores(X, rows, labels, threads))
        return Fusion(ids, logits, votes, self._logits_of(X) if votes.nnz else None, rerank_of), log_normalizer

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

    def top(self, X: sp.csr_matrix, k: int, dense: bool, weight: float, rerank_weight: float = 0.0
            ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, fused scores) of the top k."""
        return self.fusion(X, k, dense)[0].top(weight, k, rerank_weight)

    def top_proba(self, X: sp.csr_matrix, k: int, weight: float, rerank_weight: float = 0.0
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, probabilities) of the top k: softmax(logit + weight x vote + rerank_weight x
        re-ranker score), the last term on the shortlisted labels only, normalised exactly."""
        fusion, log_normalizer = self.fusion(X, k, True, normaliser=True)
        ids, scores = fusion.top(weight, k, rerank_weight)
        norm = fusion.log_normalizer(weight, log_normalizer, rerank_weight)
        return ids, np.exp(scores - norm[:, None]).astype(np.float32)

    def best_weights(self, X: sp.csr_matrix, Y: sp.csr_matrix, ks: tuple[int, ...], monitor: str, dense: bool,
                     weights: tuple[float, ...], rerank_weights: tuple[float, ...]
                     ) -> tuple[tuple[float, float], dict[tuple[float, float], float]]:
        """The (vote weight, re-ranker weight) pair with the best `monitor` on X, Y, and every pair's score."""
        fusion, _ = self.fusion(X, max(ks), dense)
        # Under MPI each rank scores its own rows; every rank picks from the means over all of them.
        over_ranks = lambda report: self.net.ranks.mean(report, X.shape[0])  # noqa: E731
        return pick_weights(fusion, Y, ks, monitor, weights, rerank_weights, combine=over_ranks)
