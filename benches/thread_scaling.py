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

from .training_rate import add_arguments, generated_data, modes, round_robin_medians, samples_per_second, write_report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    args = ap.parse_args()
    data = generated_data(args)
    configs = {(name, t): functools.partial(samples_per_second, data, lsh, threads=t, warmup=args.warmup,
                                            samples=args.samples, batch_size=args.batch_size)
               for name, lsh in modes().items() for t in args.threads}
    rates = round_robin_medians(configs, args.repeats)
    rows = []
    for (name, t), r in rates.items():
        base = rates[(name, min(args.threads))]["median"]
        rows.append({"mode": name, "threads": t, "samples_per_second": r["median"], "runs": r["runs"],
                     "speedup": r["median"] / base})
        print(f"{name:20s} {t} threads: {r['median']:8,.0f} samples/s  ({r['median'] / base:.2f}x)", flush=True)
    write_report("thread_scaling", args, max(args.threads), rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
