"""The vote's hidden-space search (`neighbour_space` hidden or both) at Amazon-670K's shape: every
query against every remembered point in the network's top hidden layer, exactly, so its cost is
queries x points x hidden multiply-adds. Timed on a share of the test set and scaled to the whole,
with the votes of a few queries checked against a NumPy brute force.

    python -m benches.hidden_neighbour_search [--points 490449] [--queries 5000] [--hidden 128]

Writes benches/results/hidden_neighbour_search.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .environment import describe
from .result_file import write_result

RESULT = Path(__file__).resolve().parent / "results" / "hidden_neighbour_search.json"
AMAZON_TRAIN, AMAZON_TEST, AMAZON_LABELS = 490_449, 153_025, 670_091
CHECKED_QUERIES = 50


def random_unit_rows(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    rows = rng.standard_normal((n, width), dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def brute_votes(queries: np.ndarray, points: np.ndarray, labels: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """The reference: the k most similar points (positive similarities only) times their labels, over k."""
    S = queries @ points.T
    near = np.argsort(-S, axis=1, kind="stable")[:, :k]
    sim = np.maximum(np.take_along_axis(S, near, axis=1), 0.0)
    weights = sp.csr_matrix((sim.ravel(), near.ravel(), np.arange(0, sim.size + 1, k)), shape=S.shape)
    votes = (weights @ labels).tocsr()
    votes.data /= np.float32(k)
    votes.eliminate_zeros()
    return votes


def main() -> None:
    from slide._core import dense_neighbour_votes

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=AMAZON_TRAIN)
    p.add_argument("--queries", type=int, default=5_000)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--labels", type=int, default=AMAZON_LABELS)
    p.add_argument("--test-points", type=int, default=AMAZON_TEST, help="the test set the time is scaled to")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    points, queries = random_unit_rows(rng, a.points, a.hidden), random_unit_rows(rng, a.queries, a.hidden)
    per_point = rng.integers(1, 10, a.points)  # Amazon-670K's points carry about 5 labels
    indptr = np.concatenate([[0], np.cumsum(per_point)]).astype(np.int64)
    labels = sp.csr_matrix((np.ones(indptr[-1], np.float32), rng.integers(0, a.labels, indptr[-1]).astype(np.int32),
                            indptr), shape=(a.points, a.labels))
    labels.sum_duplicates()
    labels.data[:] = 1.0
    l_indptr, l_indices = labels.indptr.astype(np.int64), labels.indices.astype(np.int32)

    def search(q: np.ndarray) -> sp.csr_matrix:
        ptr, ids, votes = dense_neighbour_votes(q, points, l_indptr, l_indices, a.labels, a.k, a.threads)
        return sp.csr_matrix((votes, ids, ptr), shape=(q.shape[0], a.labels))

    engine = search(queries[:CHECKED_QUERIES])
    reference = brute_votes(queries[:CHECKED_QUERIES], points, labels, a.k)
    gap = float(abs(engine - reference).max()) if engine.nnz or reference.nnz else 0.0
    seconds = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        search(queries)
        seconds.append(time.perf_counter() - t0)
    median = float(np.median(seconds))
    result = {"benchmark": "hidden_neighbour_search", "points": a.points, "queries": a.queries, "hidden": a.hidden,
              "labels": a.labels, "k": a.k, "rounds_seconds": [round(s, 3) for s in seconds],
              "median_seconds": round(median, 3),
              "gflops": round(2.0 * a.queries * a.points * a.hidden / median / 1e9, 1),
              "test_points": a.test_points, "test_set_seconds": round(median * a.test_points / a.queries, 1),
              "checked_queries": CHECKED_QUERIES, "max_vote_difference": gap,
              "environment": describe(a.threads)}
    write_result(a.out, result)


if __name__ == "__main__":
    main()
