"""Ranking metrics for extreme classification: precision@k and nDCG@k.

Both are averaged over every sample, as the Extreme Classification Repository does; a sample with
no labels scores 0.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import scipy.sparse as sp


def _hits(top_ids: np.ndarray, Y: sp.csr_matrix) -> np.ndarray:
    """hits[i, j] is True when top_ids[i, j] is a true label of sample i."""
    n, k = top_ids.shape
    rows = np.repeat(np.arange(n), k)
    cols = top_ids.ravel()
    valid = cols >= 0
    out = np.zeros(n * k, dtype=bool)
    out[valid] = np.asarray(Y[rows[valid], cols[valid]]).ravel() != 0
    return out.reshape(n, k)


def precision_at_k(top_ids: np.ndarray, Y: sp.csr_matrix, k: int) -> float:
    """Mean over samples of (true labels among the first k predictions) / k."""
    if top_ids.shape[0] == 0:
        return 0.0
    return float(_hits(top_ids[:, :k], Y).sum(axis=1).mean() / k)


def ndcg_at_k(top_ids: np.ndarray, Y: sp.csr_matrix, k: int) -> float:
    """Mean over samples of DCG@k / ideal DCG@k with binary relevance."""
    if top_ids.shape[0] == 0:
        return 0.0
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = (_hits(top_ids[:, :k], Y) * discounts[: top_ids[:, :k].shape[1]]).sum(axis=1)
    n_labels = np.minimum(np.diff(Y.indptr), k)
    ideal = np.concatenate([[0.0], np.cumsum(discounts)])[n_labels]
    return float(np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0).mean())


def ranking_report(top_ids: np.ndarray, Y: sp.csr_matrix, ks: Iterable[int] = (1, 3, 5)) -> dict[str, float]:
    """{"P@1": ..., "P@3": ..., "nDCG@1": ...} for each k in ks."""
    ks = list(ks)
    out = {f"P@{k}": precision_at_k(top_ids, Y, k) for k in ks}
    out.update({f"nDCG@{k}": ndcg_at_k(top_ids, Y, k) for k in ks})
    return out
