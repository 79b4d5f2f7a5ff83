"""How much sooner slide reaches TensorFlow full softmax's one-epoch test P@1, on data shaped like
the comparison's (generated Amazon-670K shape, 100k training points, 2 threads, batch 256, Adam
1e-3) with a 2,000-point shuffled test set, so that frequent checkpoints stay cheap.

    pip install ".[baselines]"
    python -m benches.time_to_accuracy [--systems slide-batch slide-fp32 torch-sampled]

TensorFlow trains exactly one epoch (about 5 minutes here) and is scored on the test set. Each
other system then trains for a twentieth of TensorFlow's epoch time, scored on the same test
points at `--checkpoints` evenly spaced training times (evaluation time excluded); the result is
the first checkpoint at or above TensorFlow's P@1 and the ratio of the two training times.
Writes benches/results/time_to_accuracy.json after each system.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .compare.runner import generated_data, run_system
from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"


def save(report: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "time_to_accuracy.json").write_text(json.dumps(report, indent=2) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", nargs="*", default=["slide-batch", "slide-fp32"])
    ap.add_argument("--train", type=int, default=100_000)
    ap.add_argument("--test", type=int, default=2_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--speedup", type=float, default=20.0, help="the others train for TF's epoch time / this")
    ap.add_argument("--checkpoints", type=int, default=25)
    args = ap.parse_args()
    common = dict(threads=args.threads, batch_size=args.batch_size, lr=args.lr, checkpoint_test=args.test)
    with generated_data(args.train, args.test) as data_dir:
        print("tf-full, one epoch:", flush=True)
        tf = run_system("tf-full", data_dir, budget=1e9, max_epochs=1, checkpoints=1, **common)
        if tf is None:
            return 1
        tf_seconds, target = tf["train_seconds"], tf["final"]["P@1"]
        print(f"  {tf_seconds:.1f} s, P@1 {target:.4f}", flush=True)
        budget = tf_seconds / args.speedup
        report = {"benchmark": "time_to_accuracy", "environment": describe(args.threads), "config": vars(args),
                  "tf_full_one_epoch": {"train_seconds": tf_seconds, "P@1": target, "final": tf["final"],
                                        "samples_per_second": tf["samples_per_second"]},
                  "budget_seconds": budget, "results": {}}
        save(report)
        for name in args.systems:
            print(f"{name}, {budget:.1f} s:", flush=True)
            r = run_system(name, data_dir, budget=budget, max_epochs=1000, checkpoints=args.checkpoints, **common)
            if r is None:
                continue
            reached = next((c for c in r["timeline"] if c["P@1"] >= target), None)
            report["results"][name] = {
                "seconds_to_tf_epoch_p1": reached and reached["train_seconds"],
                "samples_to_tf_epoch_p1": reached and reached["samples"],
                "times_sooner_than_tf": reached and tf_seconds / reached["train_seconds"],
                "p1_at_budget": r["timeline"][-1]["P@1"] if r["timeline"] else None,
                "samples_per_second": r["samples_per_second"], "timeline": r["timeline"]}
            save(report)
            if reached:
                print(f"  reached P@1 {reached['P@1']:.4f} at {reached['train_seconds']:.2f} s "
                      f"({tf_seconds / reached['train_seconds']:.0f}x sooner)", flush=True)
            else:
                print(f"  not reached within {budget:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
