"""Ranking metrics for extreme classification: precision@k, nDCG@k and propensity-scored P@k.

Both are averaged over every sample, as the Extreme Classification Repository does; a sample with
no labels scores 0.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import scipy.sparse as sp


def pair_keys(rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """One int64 per (sample row, label id) pair, row << 32 | label, for membership tests over
    pairs; sorted wherever the pairs are (rows first, then labels)."""
    return (rows.astype(np.int64) << 32) | labels.astype(np.int64)


def label_keys(Y: sp.csr_matrix) -> np.ndarray:
    """Y's true (sample, label) pairs as sorted `pair_keys` (explicit zeros left out)."""
    Y = sp.csr_matrix(Y)
    if not Y.has_canonical_format:
        Y = Y.copy()
        Y.sum_duplicates()
    nonzero = Y.data != 0
    # sorted: rows in order, each row's labels sorted
    return pair_keys(np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr)), Y.indices)[nonzero]


def _hits(top_ids: np.ndarray, Y: sp.csr_matrix) -> np.ndarray:
    """hits[i, j] is True when top_ids[i, j] is a true label of sample i (Y[i, top_ids[i, j]] != 0).
    One sorted search over (sample, label) keys: scipy's element indexing took most of the
    fusion weights' pick (130 weight pairs, each scored at P@1/3/5 and nDCG@1/3/5)."""
    n, k = top_ids.shape
    if n > Y.shape[0]:
        raise ValueError(f"{n} samples ranked, but the labels hold only {Y.shape[0]} rows")
    truth = label_keys(Y)
    cols = top_ids.ravel().astype(np.int64)
    keys = pair_keys(np.repeat(np.arange(n), k), np.maximum(cols, 0))
    at = np.minimum(np.searchsorted(truth, keys), max(truth.size - 1, 0))
    found = truth[at] == keys if truth.size else np.zeros(keys.size, bool)
    return (found & (cols >= 0)).reshape(n, k)


def _precision(hits: np.ndarray, k: int) -> float:
    return float(_point_precision(hits, k).mean())


def _point_precision(hits: np.ndarray, k: int) -> np.ndarray:
    return hits[:, :k].sum(axis=1) / k


def _ndcg(hits: np.ndarray, Y: sp.csr_matrix, k: int) -> float:
    return float(_point_ndcg(hits, Y, k).mean())


def _point_ndcg(hits: np.ndarray, Y: sp.csr_matrix, k: int) -> np.ndarray:
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = (hits[:, :k] * discounts[: hits[:, :k].shape[1]]).sum(axis=1)
    n_labels = np.minimum(np.diff(Y.indptr), k)
    ideal = np.concatenate([[0.0], np.cumsum(discounts)])[n_labels]
    return np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


def point_metric(hits: np.ndarray, Y: sp.csr_matrix, metric: str) -> np.ndarray:
    """float64 [samples]: each sample's `metric` ("P@k" or "nDCG@k") from its hits (as
    `hit_report` takes them); `hit_report`'s value is their mean."""
    name, k = metric.split("@")
    if name == "P":
        return _point_precision(hits, int(k)).astype(np.float64)
    if name == "nDCG":
        return _point_ndcg(hits, Y, int(k))
    raise ValueError(f"a metric per sample is P@k or nDCG@k, got {metric!r}")


def precision_at_k(top_ids: np.ndarray, Y: sp.csr_matrix, k: int) -> float:
    """Mean over samples of (true labels among the first k predictions) / k."""
    if top_ids.shape[0] == 0:
        return 0.0
    return _precision(_hits(top_ids[:, :k], Y), k)


def ndcg_at_k(top_ids: np.ndarray, Y: sp.csr_matrix, k: int) -> float:
    """Mean over samples of DCG@k / ideal DCG@k with binary relevance."""
    if top_ids.shape[0] == 0:
        return 0.0
    return _ndcg(_hits(top_ids[:, :k], Y), Y, k)


def inverse_propensities(Y_train: sp.csr_matrix, a: float = 0.55, b: float = 1.5) -> np.ndarray:
    """1 / p_l for every label: Jain et al. (2016)'s model of how likely a relevant label is to be
    observed, p_l = 1 / (1 + C (N_l + B)^-A) with C = (ln N - 1)(B + 1)^A, from the label's N_l
    training points out of N. A=0.55, B=1.5 is the XC repository's default (Amazon: 0.6, 2.6;
    Wikipedia: 0.5, 0.4). Rare labels weigh more."""
    Y_train = sp.csr_matrix(Y_train)
    n = Y_train.shape[0]
    counts = np.bincount(Y_train.indices, minlength=Y_train.shape[1]).astype(np.float64)
    c = (np.log(n) - 1.0) * (b + 1.0) ** a
    return 1.0 + c * (counts + b) ** -a


def psp_at_k(top_ids: np.ndarray, Y: sp.csr_matrix, inv_propensity: np.ndarray, k: int) -> float:
    """Propensity-scored precision@k, normalised as the XC repository does: the inverse
    propensities of the hits in the top k, over those of the best possible top k (the sample's
    true labels ordered by inverse propensity), each summed over all samples."""
    if top_ids.shape[0] == 0:
        return 0.0
    top = top_ids[:, :k]
    gained = (_hits(top, Y) * inv_propensity[np.maximum(top, 0)]).sum()
    ideal = 0.0
    for i in range(Y.shape[0]):
        weights = inv_propensity[Y.indices[Y.indptr[i]:Y.indptr[i + 1]]]
        ideal += np.sort(weights)[::-1][:k].sum()
    return float(gained / ideal) if ideal > 0 else 0.0


def ranking_report(top_ids: np.ndarray, Y: sp.csr_matrix, ks: Iterable[int] = (1, 3, 5)) -> dict[str, float]:
    """{"P@1": ..., "P@3": ..., "nDCG@1": ...} for each k in ks."""
    ks = list(ks)
    return hit_report(_hits(top_ids[:, :max(ks)], Y), sp.csr_matrix(Y), ks)  # no samples: every metric 0


def hit_report(hits: np.ndarray, Y: sp.csr_matrix, ks: Iterable[int]) -> dict[str, float]:
    """`ranking_report` from its hits (bool [samples, max(ks)]: whether each ranked label is one of
    the sample's), for a caller that knows them without the labels' ids (`pick_weights`). Every
    metric is 0 over no samples."""
    ks = list(ks)
    if hits.shape[0] == 0:
        return {f"{metric}@{k}": 0.0 for metric in ("P", "nDCG") for k in ks}
    out = {f"P@{k}": _precision(hits, k) for k in ks}
    out.update({f"nDCG@{k}": _ndcg(hits, Y, k) for k in ks})
    return out


def xc_report(top_ids: np.ndarray, Y: sp.csr_matrix, inv_propensity: np.ndarray,
              ks: Iterable[int] = (1, 3, 5)) -> dict[str, float]:
    """The Extreme Classification Repository's table: P@k, nDCG@k and PSP@k for each k."""
    out = ranking_report(top_ids, Y, ks)
    out.update({f"PSP@{k}": psp_at_k(top_ids, Y, inv_propensity, k) for k in ks})
    return out
