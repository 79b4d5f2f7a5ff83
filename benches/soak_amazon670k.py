"""Soak: several epochs on generated Amazon-670K-shaped data (135,909 -> 128 -> 670,091) with
table maintenance four times as frequent as SLIDE's, and a full checkpoint written and reloaded
every epoch. Measures, per epoch: resident memory, throughput, loss, exact test P@1 and whether
any parameter holds a NaN/inf. Target: RSS after the last epoch within 2% of RSS after the first.

    python -m benches.soak_amazon670k                       # 6 epochs of 100k points (~15 min)
    python -m benches.soak_amazon670k --epochs 3 --train 30000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def all_finite(net) -> bool:
    return all(np.isfinite(w).all() for w in net.weights().values() if w.dtype.kind == "f")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--train", type=int, default=100_000)
    ap.add_argument("--test", type=int, default=2_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()

    import slide
    from slide.datasets.synthetic import AMAZON670K_SHAPE, synthetic_amazon670k

    t0 = time.perf_counter()
    train, test = synthetic_amazon670k(args.train, args.test, seed=0)
    print(f"generated {args.train:,} + {args.test:,} points in {time.perf_counter() - t0:.1f} s", flush=True)
    lsh = slide.LSHConfig(rehash_every=1600, rebuild_every=32_000)  # SLIDE's 6,400 and 128,000, four times as often
    net = slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(128,), lsh=lsh, learning_rate=args.lr,
                        threads=args.threads, seed=0)
    data = net.prepare(train.X, train.Y)
    epochs = []
    with tempfile.TemporaryDirectory(dir=RESULTS.parent) as tmp:
        checkpoint = Path(tmp) / "checkpoint.npz"
        for epoch in range(args.epochs):
            order = np.random.default_rng([0, epoch]).permutation(len(data))
            before = net.table_stats()
            t0 = time.perf_counter()
            totals = net.train_rows(data, order, batch_size=args.batch_size, lr=args.lr)
            seconds = time.perf_counter() - t0
            after = net.table_stats()
            t1 = time.perf_counter()
            net.save(checkpoint)
            save_s = time.perf_counter() - t1
            t1 = time.perf_counter()
            net = slide.Network.load(checkpoint, threads=args.threads)  # a resumed run's whole path
            load_s = time.perf_counter() - t1
            report = net.evaluate(test.X, test.Y)
            layer = after["layers.0"]
            epochs.append({
                "epoch": epoch + 1,
                "train_seconds": round(seconds, 2),
                "samples_per_second": round(len(order) / seconds, 1),
                "loss": totals["loss"] / max(totals["samples"], 1),
                "active_per_sample": totals["active"] / max(totals["samples"], 1),
                "rehashes": layer["rehashes"] - before["layers.0"]["rehashes"],
                "rebuilds": layer["generation"] - before["layers.0"]["generation"],
                "rehashed_neurons": layer["rehashed_neurons"] - before["layers.0"]["rehashed_neurons"],
                "checkpoint_save_seconds": round(save_s, 2),
                "checkpoint_load_seconds": round(load_s, 2),
                "test_P@1": report["P@1"],
                "all_finite": all_finite(net),
                "rss_bytes": rss_bytes(),
            })
            e = epochs[-1]
            print(f"epoch {e['epoch']}: {e['samples_per_second']:,.0f} samples/s, loss {e['loss']:.3f}, "
                  f"P@1 {e['test_P@1']:.3f}, {e['rehashes']} rehashes / {e['rebuilds']} rebuilds, "
                  f"RSS {e['rss_bytes'] / 2**30:.3f} GiB, finite {e['all_finite']}", flush=True)
    first, last = epochs[0]["rss_bytes"], epochs[-1]["rss_bytes"]
    speeds = [e["samples_per_second"] for e in epochs]
    result = {
        "benchmark": "soak_amazon670k",
        **describe(args.threads),
        "config": {**vars(args), "rehash_every": lsh.rehash_every, "rebuild_every": lsh.rebuild_every,
                   "shape": AMAZON670K_SHAPE},
        "epochs": epochs,
        "rss_growth_after_first_epoch": (last - first) / first,
        "rss_growth_target": 0.02,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "throughput_min_over_max": min(speeds) / max(speeds),
        "nan_or_inf_seen": not all(e["all_finite"] for e in epochs),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "soak_amazon670k.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"RSS growth after the first epoch: {result['rss_growth_after_first_epoch']:+.2%} (target < 2%); "
          f"throughput min/max {result['throughput_min_over_max']:.2f}; NaN/inf: {result['nan_or_inf_seen']}")
    return 0 if result["rss_growth_after_first_epoch"] < 0.02 and not result["nan_or_inf_seen"] else 1


if __name__ == "__main__":
    sys.exit(main())
