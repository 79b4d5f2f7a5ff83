"""A network and a memory of its training points, composed: the network's top-k fused with the
labels of each query's nearest training points (see `slide.neighbours` for the fusion itself)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..neighbours import Fusion, NeighbourMemory, pick_weight

_CHUNK = 1 << 16  # rows of logits computed at once for the voted labels


class VotedNetwork:
    """`net`'s scores plus `weight` x the vote of the `neighbours` nearest points of `memory`."""

    def __init__(self, net: Any, memory: NeighbourMemory, neighbours: int) -> None:
        self.net, self.memory, self.neighbours = net, memory, neighbours

    def fusion(self, X: sp.csr_matrix, k: int, dense: bool, normaliser: bool = False
               ) -> tuple[Fusion, Optional[np.ndarray]]:
        """The network's top-k and the neighbours' votes for X, ready to rank at any weight; and,
        with `normaliser` (dense only), the network's log-normaliser per sample, which only
        probabilities need: it costs an exp per output and sample, more than the scores."""
        engine = self.net._core
        if dense and normaliser:
            ids, logits, log_normalizer = engine.predict(X.indptr, X.indices, X.data, k, True, True)
        else:  # ranking needs no normaliser, and LSH inference has no exact one
            (ids, logits), log_normalizer = engine.predict(X.indptr, X.indices, X.data, k, dense,
                                                           cache=self.net._scan_cache), None
        votes = self.memory.votes(X, self.neighbours, self.net.threads)
        hidden = engine.hidden(X.indptr, X.indices, X.data)
        state = engine.state()
        top = len(self.net.hidden) - 1
        W, b = state[f"layers.{top}.weight"], state[f"layers.{top}.bias"]

        def logits_of(rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
            out = np.empty(rows.size, np.float32)
            for s in range(0, rows.size, _CHUNK):
                r, l = rows[s:s + _CHUNK], labels[s:s + _CHUNK]
                out[s:s + r.size] = np.einsum("ij,ij->i", hidden[r], W[l]) + b[l]
            return out

        return Fusion(ids, logits, votes, logits_of), log_normalizer

    def top(self, X: sp.csr_matrix, k: int, dense: bool, weight: float) -> tuple[np.ndarray, np.ndarray]:
        """(ids, fused scores) of the top k."""
        return self.fusion(X, k, dense)[0].top(weight, k)

    def top_proba(self, X: sp.csr_matrix, k: int, weight: float) -> tuple[np.ndarray, np.ndarray]:
        """(ids, probabilities) of the top k: softmax(logit + weight x vote), normalised exactly."""
        fusion, log_normalizer = self.fusion(X, k, True, normaliser=True)
        ids, scores = fusion.top(weight, k)
        return ids, np.exp(scores - fusion.log_normalizer(weight, log_normalizer)[:, None]).astype(np.float32)

    def best_weight(self, X: sp.csr_matrix, Y: sp.csr_matrix, ks: tuple[int, ...], monitor: str, dense: bool
                    ) -> tuple[float, dict[float, float]]:
        """The weight of `slide.neighbours.WEIGHTS` with the best `monitor` on X, Y, and every weight's score."""
        fusion, _ = self.fusion(X, max(ks), dense)
        return pick_weight(fusion, Y, ks, monitor)
