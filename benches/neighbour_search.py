"""The neighbours' vote at Amazon-670K shape: the engine's inverted-index search against the scipy
sparse products with a dense top-k it replaced (kept here as the reference), side by side in
alternating rounds on the same queries. Both must give the same votes.

    python -m benches.neighbour_search [--train 98000] [--queries 2000] [--rounds 3] [--threads 2]

Writes benches/results/neighbour_search.json.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .environment import describe
from .result_file import write_result

RESULT = Path(__file__).resolve().parent / "results" / "neighbour_search.json"


def scipy_votes(memory, X: sp.csr_matrix, k: int, threads: int) -> sp.csr_matrix:
    """The search slide used before cpp/neighbours: blocks of queries times the points' transpose,
    made dense, argpartitioned, and the k nearest similarities times their labels."""
    from slide.datasets.synthetic import unit_rows

    Q, n = unit_rows(X), len(memory)
    block = max(1, (1 << 25) // n // threads)

    def vote_block(s: int) -> sp.csr_matrix:
        S = (Q[s:s + block] @ memory._by_feature).toarray()
        near = np.argpartition(-S, k - 1, axis=1)[:, :k]
        sim = np.maximum(np.take_along_axis(S, near, axis=1), 0.0)
        weights = sp.csr_matrix((sim.ravel(), near.ravel(), np.arange(0, sim.size + 1, k)), shape=S.shape)
        return weights @ memory.labels

    with ThreadPoolExecutor(max_workers=threads) as pool:
        V = sp.vstack(list(pool.map(vote_block, range(0, Q.shape[0], block)))).tocsr()
    V.eliminate_zeros()
    V.data /= np.float32(k)
    return V


def main() -> None:
    from slide.datasets.catalogue import catalogue_amazon670k
    from slide.neighbours import NeighbourMemory

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=int, default=98_000)
    p.add_argument("--queries", type=int, default=2_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    train, test = catalogue_amazon670k(a.train, a.queries)
    memory = NeighbourMemory(train.X, train.Y)
    postings = np.diff(memory._by_feature.indptr)[test.X.indices].sum() / test.X.shape[0]
    rounds = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        engine = memory.votes(test.X, a.k, a.threads)
        t1 = time.perf_counter()
        reference = scipy_votes(memory, test.X, a.k, a.threads)
        t2 = time.perf_counter()
        gap = float(abs(engine - reference).max()) if engine.nnz or reference.nnz else 0.0
        rounds.append({"engine_seconds": round(t1 - t0, 3), "scipy_seconds": round(t2 - t1, 3),
                       "speedup": round((t2 - t1) / (t1 - t0), 2), "max_vote_difference": gap})
    result = {"benchmark": "neighbour_search", "points": a.train, "queries": a.queries, "k": a.k,
              "postings_per_query": round(float(postings)), "rounds": rounds,
              "median_speedup": float(np.median([r["speedup"] for r in rounds])),
              "environment": describe(a.threads)}
    write_result(a.out, result)


if __name__ == "__main__":
    main()
