"""End-to-end engine benchmark on generated Amazon-670K-shaped data (135,909 -> 128 -> 670,091).

One run, side by side: slide sampled (DWTA, SLIDE's configuration) trains one epoch; slide dense
(full softmax) then trains for the same wall-clock time. Both are evaluated exactly (P@1/3/5) on
the same shuffled test sample. Each model trains in its own process, so peak RSS is per model.

    python -m benches.engine_amazon670k                # full size (about 15 minutes on 2 cores)
    python -m benches.engine_amazon670k --train 50000  # quicker look
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _load(data_dir: Path):
    import scipy.sparse as sp

    return [sp.load_npz(data_dir / f"{n}.npz").tocsr() for n in ("Xtr", "Ytr", "Xte", "Yte")]


def run_model(mode: str, data_dir: Path, threads: int, batch_size: int, lr: float, budget: float | None) -> dict:
    """Train and evaluate one model in this process; returns its measurements."""
    import numpy as np

    import slide

    Xtr, Ytr, Xte, Yte = _load(data_dir)
    lsh = slide.LSHConfig() if mode == "sampled" else None
    t0 = time.perf_counter()
    net = slide.Network(Xtr.shape[1], Ytr.shape[1], hidden=(128,), lsh=lsh, learning_rate=lr, threads=threads, seed=0)
    build_s = time.perf_counter() - t0
    maintenance_at_start = net.table_stats().get("layers.0", {}).get("maintenance_seconds", 0.0)
    trained, train_s, active, batches = 0, 0.0, 0.0, 0
    if budget is None:  # one epoch
        h = net.fit(Xtr, Ytr, epochs=1, batch_size=batch_size, progress=False)
        trained, train_s, active = Xtr.shape[0], h[0]["seconds"], h[0]["active_per_sample"]
    else:  # as many samples as fit in the budget, chunk by chunk
        order = np.random.default_rng(0).permutation(Xtr.shape[0])
        chunk = batch_size * 4
        while train_s < budget and trained < Xtr.shape[0]:
            rows = order[trained:trained + chunk]
            h = net.fit(Xtr[rows], Ytr[rows], epochs=1, batch_size=batch_size, progress=False, shuffle=False)
            train_s += h[0]["seconds"]
            trained += len(rows)
            active = h[0]["active_per_sample"]
    t1 = time.perf_counter()
    report = net.evaluate(Xte, Yte)
    eval_s = time.perf_counter() - t1
    maintenance = net.table_stats().get("layers.0", {}).get("maintenance_seconds", 0.0) - maintenance_at_start
    return {
        "mode": mode,
        "train_samples": trained,
        "train_seconds": train_s,
        "samples_per_second": trained / train_s,
        "active_outputs_per_sample": active,
        "build_seconds": build_s,
        "table_maintenance_seconds": maintenance,
        "table_maintenance_share": maintenance / train_s,
        "eval_seconds": eval_s,
        "test": report,
        "model_bytes": net.memory_bytes,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def child(args) -> None:
    out = run_model(args.child, Path(args.data), args.threads, args.batch_size, args.lr, args.budget)
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", type=int, default=490_449, help="training points (Amazon-670K has 490,449)")
    p.add_argument("--test", type=int, default=5_000, help="test points evaluated exactly")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--out", type=Path, default=RESULTS / "engine_amazon670k.json")
    p.add_argument("--child", choices=["sampled", "dense"], help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--budget", type=float, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)

    import scipy.sparse as sp

    from slide.datasets import synthetic_amazon670k

    from .environment import describe

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        train, test = synthetic_amazon670k(n_train=args.train, n_test=args.test, seed=0)
        gen_s = time.perf_counter() - t0
        for name, m in (("Xtr", train.X), ("Ytr", train.Y), ("Xte", test.X), ("Yte", test.Y)):
            sp.save_npz(Path(tmp) / f"{name}.npz", m, compressed=False)
        print(f"generated {args.train:,} + {args.test:,} points in {gen_s:.1f}s", flush=True)
        common = ["--data", tmp, "--threads", str(args.threads), "--batch-size", str(args.batch_size),
                  "--lr", str(args.lr)]

        def launch(mode, budget=None):
            cmd = [sys.executable, "-m", "benches.engine_amazon670k", "--child", mode, *common]
            if budget is not None:
                cmd += ["--budget", str(budget)]
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
            if r.returncode != 0:
                raise SystemExit(f"{mode} run failed:\n{r.stderr}")
            res = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"{mode}: {res['samples_per_second']:,.0f} samples/s over {res['train_samples']:,} samples, "
                  f"P@1 {res['test']['P@1']:.4f}, peak RSS {res['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
            return res

        sampled = launch("sampled")
        dense = launch("dense", budget=sampled["train_seconds"])
    result = {
        "benchmark": "engine_amazon670k",
        "shape": {"features": 135_909, "hidden": 128, "labels": 670_091, "train": args.train, "test": args.test},
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "generation_seconds": gen_s,
        "environment": describe(args.threads),
        "sampled": sampled,
        "dense_same_wall_clock": dense,
        "speedup_samples_per_second": sampled["samples_per_second"] / dense["samples_per_second"],
        "p_at_1_gap_at_equal_time": sampled["test"]["P@1"] - dense["test"]["P@1"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(result, indent=2) + "\n")
    tmp_out.replace(args.out)
    print(json.dumps({k: result[k] for k in ("speedup_samples_per_second", "p_at_1_gap_at_equal_time")}, indent=2))


if __name__ == "__main__":
    main()
