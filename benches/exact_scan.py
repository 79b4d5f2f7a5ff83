"""Exact top-k at Amazon-670K width: the int8 scan with fp32 rescoring (the default) against the
fp32 GEMM over every output (the oracle), side by side in alternating rounds on one trained network.
Both must return the same labels (a tie may break either way); the file records both speeds and their ratio per round.

    python -m benches.exact_scan                     # 670,091 outputs, hidden 128, 2,000 test points
    python -m benches.exact_scan --points 10000 --rounds 3

Writes benches/results/exact_scan.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=20_000, help="training points (one epoch, batch mode)")
    ap.add_argument("--points", type=int, default=2_000, help="test points scored per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS / "exact_scan.json")
    args = ap.parse_args()
    environment = describe(args.threads)

    import slide
    from slide.datasets.catalogue import catalogue_amazon670k

    train, test = catalogue_amazon670k(args.train, args.points, seed=1)
    net = slide.Network(input_dim=train.X.shape[1], output_dim=train.Y.shape[1], threads=args.threads, seed=1)
    net.fit(train.X, train.Y, epochs=1, progress=False)
    X = test.X
    rounds = []
    for r in range(args.rounds):
        seconds, results = {}, {}
        for scan in (("fp32", "int8") if r % 2 == 0 else ("int8", "fp32")):
            t0 = time.perf_counter()
            results[scan] = net._core.predict(X.indptr, X.indices, X.data, 5, True, False, scan)
            seconds[scan] = time.perf_counter() - t0
        same = float((results["int8"][0] == results["fp32"][0]).mean())
        score_gap = float(np.abs(results["int8"][1] - results["fp32"][1]).max())
        # A different label in a place is only a tie broken the other way when both scores agree.
        differ = results["int8"][0] != results["fp32"][0]
        not_ties = int((differ & ~np.isclose(results["int8"][1], results["fp32"][1], rtol=1e-5, atol=1e-5)).sum())
        rounds.append({"fp32_ms_per_point": round(1e3 * seconds["fp32"] / X.shape[0], 3),
                       "int8_ms_per_point": round(1e3 * seconds["int8"] / X.shape[0], 3),
                       "speedup": round(seconds["fp32"] / seconds["int8"], 3),
                       "same_labels": same, "different_labels_not_ties": not_ties,
                       "largest_score_difference": score_gap})
        print(f"round {r + 1}: fp32 {rounds[-1]['fp32_ms_per_point']} ms/point, int8 {rounds[-1]['int8_ms_per_point']}"
              f" ms/point, {rounds[-1]['speedup']}x, same labels {same:.4f}")
    speedups = [r["speedup"] for r in rounds]
    report = {"benchmark": "exact_scan", "outputs": int(train.Y.shape[1]), "hidden": list(net.hidden),
              "train_points": args.train, "test_points": int(X.shape[0]), "k": 5, "rounds": rounds,
              "speedup_median": float(np.median(speedups)), "speedup_range": [min(speedups), max(speedups)],
              "environment": environment}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"median {report['speedup_median']}x; wrote {args.out}")
    return 0 if all(r["different_labels_not_ties"] == 0 for r in rounds) else 1


if __name__ == "__main__":
    raise SystemExit(main())
