"""MPI scaling: bytes sent per step and time per step for 1-4 ranks on this machine, an
Amazon-670K-shaped network (135,909 features -> 128 -> 670,091 labels, mode "batch", batch 256).

The ranks share this machine's 2 cores, so time per step is reported, not speed-up. Three byte
counts are set side by side per rank count:
  model:    the closed-form ring cost of each collective a step makes (below), from the batch's
            shape and the embedding rows the step touched;
  counted:  what slide.distributed's Communicator counted on each call (the ring cost of what
            was actually passed);
  measured: the bytes that crossed the loopback interface (/proc/net/dev) with Open MPI forced
            onto TCP (--mca btl self,tcp), all ranks together, which includes Open MPI's own
            algorithms and the TCP/IP headers.
Both sparse exchanges of the embedding gradient are run (allgather, allreduce of the union), so
which wins at which rank count is measured, not assumed. From the bytes and the 1-rank step time
the model predicts samples/s for N nodes on 25 GbE and 100 Gb InfiniBand.

    python -m benches.mpi_scaling            # writes benches/results/mpi_scaling.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

FEATURES, HIDDEN, LABELS = 135_909, 128, 670_091
NNZ, LABELS_PER_POINT = 76, 5   # Amazon-670K: 75.7 features and 5.45 labels per point
LINKS = {"25GbE": (25e9 / 8, 20e-6), "100Gb_InfiniBand": (100e9 / 8, 3e-6)}  # bytes/s, latency per message


def zipf_ids(rng: np.random.Generator, n: int, size: int, count: int, a: float = 1.1) -> np.ndarray:
    """`count` distinct ids out of `size` per row, popular ids far more often (as real words and labels)."""
    out = np.empty((n, count), np.int64)
    for i in range(n):
        ids = np.unique(np.minimum(rng.zipf(a, count * 3) - 1, size - 1))[:count]
        while ids.size < count:
            ids = np.unique(np.concatenate([ids, rng.integers(0, size, count)]))[:count]
        out[i] = ids
    return out


def rank_data(rank: int, ranks: int, rows: int, seed: int = 0) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    rng = np.random.default_rng(seed * 1000 + rank)
    feats = zipf_ids(rng, rows, FEATURES, NNZ)
    labels = zipf_ids(rng, rows, LABELS, LABELS_PER_POINT, a=1.05)
    X = sp.csr_matrix((rng.random(feats.size, np.float32) + 0.1, feats.ravel(), np.arange(0, feats.size + 1, NNZ)),
                      shape=(rows, FEATURES))
    Y = sp.csr_matrix((np.ones(labels.size, np.float32), labels.ravel(),
                       np.arange(0, labels.size + 1, LABELS_PER_POINT)), shape=(rows, LABELS))
    X.sort_indices()
    Y.sort_indices()
    return X, Y


def loopback_bytes() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        if line.strip().startswith("lo:"):
            return int(line.split(":")[1].split()[8])  # bytes transmitted
    return 0


def worker(a: argparse.Namespace) -> None:
    from mpi4py import MPI

    import slide
    from slide.distributed.communicator import Communicator
    from slide.distributed.shards import batch_share

    comm = Communicator(MPI.COMM_WORLD)
    share = batch_share(a.batch, comm.size, comm.rank)
    X, Y = rank_data(comm.rank, comm.size, share * (a.warmup + a.steps))
    net = slide.Network(FEATURES, LABELS, hidden=HIDDEN, threads=a.threads, seed=0, neighbours=0, comm=comm,
                        sparse_exchange=a.exchange)
    data = net.prepare(X, Y)
    arrays = (data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices)
    times, stats_all = [], []
    for s in range(a.warmup + a.steps):
        rows = np.arange(s * share, (s + 1) * share, dtype=np.int64)
        if s == a.warmup:
            comm.barrier()
            comm.traffic = type(comm.traffic)()
            lo0 = loopback_bytes()
            t_all = time.perf_counter()
        t0 = time.perf_counter()
        stats = net._core.train_batch(*arrays, rows, 1e-3)
        if s >= a.warmup:
            times.append(time.perf_counter() - t0)
            stats_all.append(stats)
    comm.barrier()
    wall = time.perf_counter() - t_all
    lo = loopback_bytes() - lo0
    traffic = comm.gather_objects({"ring": comm.traffic.ring_bytes / a.steps, "payload": comm.traffic.payload / a.steps,
                                   "calls": comm.traffic.calls / a.steps,
                                   "by_kind": {k: v / a.steps for k, v in comm.traffic.by_kind.items()}})
    if comm.rank == 0:
        e = stats_all
        out = {"ranks": comm.size, "exchange": a.exchange, "steps": a.steps, "batch": a.batch,
               "seconds_per_step": float(np.median(times)), "wall_seconds_per_step": wall / a.steps,
               "samples_per_second": a.batch * a.steps / wall,
               "counted_ring_bytes_per_step_per_rank": [t["ring"] for t in traffic],
               "counted_payload_bytes_per_step_per_rank": [t["payload"] for t in traffic],
               "collective_calls_per_step": traffic[0]["calls"],
               "counted_by_kind_rank0": traffic[0]["by_kind"],
               "measured_loopback_bytes_per_step": lo / a.steps,
               "embedding_rows_per_step": float(np.mean([s["exchanged_rows"] for s in e])),
               "embedding_union_rows_per_step": float(np.mean([s["exchanged_union"] for s in e])),
               "allreduce_share_of_steps": float(np.mean([s["exchanged_by_allreduce"] for s in e])),
               "active_per_sample": float(np.mean([s["active"] / max(s["samples"], 1) for s in e]))}
        Path(a.out).write_text(json.dumps(out))


def ring_model(r: dict) -> float:
    """Bytes one rank sends per step by the ring formulas: allgather (N-1)/N x total, reduce-scatter
    (N-1)/N x n, allreduce 2 (N-1)/N x n; the embedding's values by the exchange taken."""
    n = r["ranks"]
    if n == 1:
        return 0.0
    f = (n - 1) / n
    from slide import MODES

    lsh = MODES["batch"].lsh_config()  # the network the workers train
    B, K, L, batch_active = r["batch"], HIDDEN, lsh.l, lsh.batch_active
    ldh = (K + 15) // 16 * 16
    samples = f * B * 4 * (1 + K + L + 1 + LABELS_PER_POINT)        # hidden, buckets, label counts and ids
    pool = f * n * 4 * (1 + 2 * batch_active)                         # every rank's best candidates
    normaliser = 2 * (2 * f * 4 * B)                                  # max and sum of B floats
    delta = f * B * ldh * 4                                           # dL/dhidden reduce-scatter
    totals = 2 * f * 8 * 3 + 2 * f * 8                                # loss/count/active, non-finite rows
    rows, union = r["embedding_rows_per_step"], r["embedding_union_rows_per_step"]
    ids = f * rows * 4
    values = 2 * f * union * K * 4 if r["exchange"] == "allreduce" else f * rows * K * 4
    dense = 2 * f * ldh * 4                                           # the embedding's bias
    return samples + pool + normaliser + delta + totals + ids + values + dense


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="1,2,3,4")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--exchange", default="allgather")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--out", default="benches/results/mpi_scaling.json")
    a = p.parse_args()
    if a.worker:
        worker(a)
        return
    from .environment import describe

    mpirun = shutil.which("mpirun")
    from slide.cli.train_mpi import environment_outside_mpi_job

    env = environment_outside_mpi_job()
    runs = []
    for n in (int(x) for x in a.ranks.split(",")):
        for exchange in ("allgather", "allreduce"):
            if n == 1 and exchange == "allreduce":
                continue
            part = Path(f"/tmp/mpi_scaling-{n}-{exchange}.json")
            cmd = [mpirun, "--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
                   "-n", str(n)] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
            cmd += [sys.executable, "-m", "benches.mpi_scaling", "--worker", "--batch", str(a.batch), "--steps",
                    str(a.steps), "--warmup", str(a.warmup), "--threads", str(a.threads), "--exchange", exchange,
                    "--out", str(part)]
            subprocess.run(cmd, check=True, env=env, stdin=subprocess.DEVNULL)
            r = json.loads(part.read_text())
            r["model_ring_bytes_per_step_per_rank"] = ring_model(r)
            counted = float(np.mean(r["counted_ring_bytes_per_step_per_rank"]))
            r["counted_over_model"] = counted / r["model_ring_bytes_per_step_per_rank"] if n > 1 else None
            r["measured_over_counted"] = r["measured_loopback_bytes_per_step"] / (counted * n) if n > 1 else None
            runs.append(r)
            print(json.dumps({k: r[k] for k in ("ranks", "exchange", "seconds_per_step", "samples_per_second",
                                                  "model_ring_bytes_per_step_per_rank", "counted_over_model",
                                                  "measured_loopback_bytes_per_step", "measured_over_counted",
                                                  "embedding_rows_per_step", "embedding_union_rows_per_step")}),
                  flush=True)
    one = next(r for r in runs if r["ranks"] == 1)
    calls = max(r["collective_calls_per_step"] for r in runs)
    widest = max(runs, key=lambda r: r["ranks"])  # the overlap of the ranks' rows, measured at the most ranks
    predictions = {}
    for link, (bandwidth, latency) in LINKS.items():
        for nodes in (1, 2, 4, 8, 16, 32):
            best = None
            for exchange in ("allgather", "allreduce"):
                shape = {"ranks": nodes, "exchange": exchange, "batch": a.batch,
                         # the global batch is fixed, so the rows it touches are too; the union is what
                         # the ranks' rows share, taken from the most ranks measured
                         "embedding_rows_per_step": widest["embedding_rows_per_step"],
                         "embedding_union_rows_per_step": widest["embedding_union_rows_per_step"]}
                step = one["seconds_per_step"] / nodes + ring_model(shape) / bandwidth + \
                    calls * latency * (nodes > 1)
                if best is None or step < best[1]:
                    best = (exchange, step)
            predictions.setdefault(link, []).append({"nodes": nodes, "exchange": best[0],
                                                     "samples_per_second": a.batch / best[1]})
    result = {"benchmark": "mpi_scaling", "shape": [FEATURES, HIDDEN, LABELS], "batch": a.batch, "runs": runs,
              "model": "step(N) = step(1) / N + ring_bytes(N) / bandwidth + calls x latency; ring_bytes from "
                       "ring_model() (allgather (N-1)/N x total, reduce-scatter (N-1)/N x n, allreduce 2(N-1)/N x n)",
              "predicted": predictions, "environment": describe(a.threads)}
    Path(a.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(predictions, indent=1))


if __name__ == "__main__":
    main()
