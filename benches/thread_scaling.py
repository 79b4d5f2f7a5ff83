"""Thread scaling on generated Amazon-670K-shaped data (135,909 -> 128 -> 670,091): training
samples/s with 1 and with 2 threads (or --threads ...), for SLIDE's per-sample active sets and for
the batch-shared active set, measured back to back in one process.

    python -m benches.thread_scaling [--samples 25600] [--threads 1 2]

Each measurement builds a fresh network, warms it up on `--warmup` samples, then times
`--samples` more, table maintenance included. Writes benches/results/thread_scaling.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .compare.slide_system import BATCH_SHARED
from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"


def measure(data, lsh, threads: int, warmup: int, samples: int, batch_size: int) -> float:
    import slide

    X, Y = data
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(128,), lsh=lsh, threads=threads, seed=0)
    prepared = net.prepare(X, Y)
    rows = np.random.default_rng(0).permutation(X.shape[0])
    net.train_rows(prepared, rows[:warmup], batch_size=batch_size, lr=1e-3)
    t0 = time.perf_counter()
    net.train_rows(prepared, rows[warmup:warmup + samples], batch_size=batch_size, lr=1e-3)
    return samples / (time.perf_counter() - t0)


def main() -> int:
    import slide
    from slide.datasets import synthetic_amazon670k

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=25_600)
    ap.add_argument("--warmup", type=int, default=6_400)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()
    train, _ = synthetic_amazon670k(n_train=args.warmup + args.samples, n_test=1, seed=0)
    data = (train.X, train.Y)
    modes = {"per-sample (SLIDE)": slide.LSHConfig(), "batch-shared": BATCH_SHARED}
    rows = []
    for name, lsh in modes.items():
        rates = {t: measure(data, lsh, t, args.warmup, args.samples, args.batch_size) for t in args.threads}
        base = rates[min(rates)]
        for t, r in rates.items():
            rows.append({"mode": name, "threads": t, "samples_per_second": r, "speedup": r / base})
            print(f"{name:20s} {t} threads: {r:8,.0f} samples/s  ({r / base:.2f}x)", flush=True)
    report = {"benchmark": "thread_scaling", "environment": describe(max(args.threads)),
              "samples": args.samples, "warmup": args.warmup, "batch_size": args.batch_size, "results": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "thread_scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
