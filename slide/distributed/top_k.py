"""Prediction over a sharded output layer: every rank scores every rank's samples against the
rows it holds, and each sample's owner merges the ranks' top-k into the top-k of the whole layer.
Ties go to the lower label id, as in a single process."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from .communicator import Communicator



def gather_rows(comm: Communicator, X: sp.csr_matrix) -> tuple[sp.csr_matrix, list[int]]:
    """Every rank's rows of X, stacked in rank order, and how many each rank gave."""
    parts = comm.gather_objects((X.indptr, X.indices, X.data, X.shape))
    counts = [shape[0] for _, _, _, shape in parts]
    blocks = [sp.csr_matrix((d, i, p), shape=shape) for p, i, d, shape in parts]
    payload = sum(p.nbytes + i.nbytes + d.nbytes for p, i, d, _ in parts)
    comm.traffic.add("allgather", X.indptr.nbytes + X.indices.nbytes + X.data.nbytes, payload)
    return sp.vstack(blocks, format="csr"), counts


def merge_top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best k of each row's candidates (rows x candidates): higher score first, then lower id;
    missing entries (id -1) last."""
    missing = ids < 0
    key_score = np.where(missing, np.inf, -scores.astype(np.float64))
    key_id = np.where(missing, np.iinfo(np.int64).max, ids.astype(np.int64))
    order = np.lexsort((key_id, key_score), axis=-1)[:, :k]
    return (np.take_along_axis(ids, order, axis=1).astype(np.int32),
            np.take_along_axis(scores, order, axis=1).astype(np.float32))


def predict(net: Any, X: sp.csr_matrix, k: int, dense: bool, normaliser: bool = False, scan: str = "auto"
            ) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """This rank's rows' top-k over the whole layer (ids, scores) and, with `normaliser`, each
    row's log-sum-exp over every output, each rank's share scanned as `scan` says. Collective:
    every rank calls it with its own X."""
    comm: Communicator = net.comm
    everyone, counts = gather_rows(comm, X)
    offset, held = net.output_shard
    local_k = min(k, held)
    if normaliser:
        ids, scores, lse = net._core.predict(everyone.indptr, everyone.indices, everyone.data, local_k, True, True)
    else:
        ids, scores = net._core.predict(everyone.indptr, everyone.indices, everyone.data, local_k, dense,
                                        scan=scan, cache=net._scan_cache)
        lse = None
    ids = np.where(ids >= 0, ids + offset, -1).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(counts)])
    out = [(ids[starts[r]:starts[r + 1]], scores[starts[r]:starts[r + 1]],
            None if lse is None else lse[starts[r]:starts[r + 1]]) for r in range(comm.size)]
    got = comm.comm.alltoall(out)  # rank r receives every rank's candidates for its own rows
    comm.traffic.add("alltoall", sum(a.nbytes + b.nbytes for a, b, _ in out),
                     sum(a.nbytes + b.nbytes for r, (a, b, _) in enumerate(out) if r != comm.rank))
    merged_ids, merged_scores = merge_top_k(np.concatenate([g[0] for g in got], axis=1),
                                            np.concatenate([g[1] for g in got], axis=1), k)
    log_normaliser = np.logaddexp.reduce(np.stack([g[2] for g in got]), axis=0).astype(np.float32) \
        if normaliser else None
    return merged_ids, merged_scores, log_normaliser
