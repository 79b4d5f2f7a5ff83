"""Thread scaling on generated Amazon-670K-shaped data (135,909 -> 128 -> 670,091): training
samples/s with 1 and with 2 threads (or --threads ...), for SLIDE's per-sample active sets and for
the batch-shared active set, measured in one process.

    python -m benches.thread_scaling [--samples 25600] [--threads 1 2] [--repeats 3]

Each measurement builds a fresh network, warms it up on `--warmup` samples, then times
`--samples` more, table maintenance included; the configurations run round-robin `--repeats`
times and each reports its median. Writes benches/results/thread_scaling.json.
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

from .compare.slide_system import BATCH_SHARED
from .environment import describe
from .training_rate import round_robin_medians, samples_per_second

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    import slide
    from slide.datasets import synthetic_amazon670k

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=25_600)
    ap.add_argument("--warmup", type=int, default=6_400)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    train, _ = synthetic_amazon670k(n_train=args.warmup + args.samples, n_test=1, seed=0)
    data = (train.X, train.Y)
    modes = {"per-sample (SLIDE)": slide.LSHConfig(), "batch-shared": BATCH_SHARED}
    configs = {(name, t): functools.partial(samples_per_second, data, lsh, threads=t, warmup=args.warmup,
                                            samples=args.samples, batch_size=args.batch_size)
               for name, lsh in modes.items() for t in args.threads}
    rates = round_robin_medians(configs, args.repeats)
    rows = []
    for (name, t), r in rates.items():
        base = rates[(name, min(args.threads))]["median"]
        rows.append({"mode": name, "threads": t, "samples_per_second": r["median"], "runs": r["runs"],
                     "speedup": r["median"] / base})
        print(f"{name:20s} {t} threads: {r['median']:8,.0f} samples/s  ({r['median'] / base:.2f}x)", flush=True)
    report = {"benchmark": "thread_scaling", "environment": describe(max(args.threads)), "samples": args.samples,
              "warmup": args.warmup, "batch_size": args.batch_size, "repeats": args.repeats, "results": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "thread_scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
