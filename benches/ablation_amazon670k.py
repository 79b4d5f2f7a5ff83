"""Why slide departs from SLIDE's defaults: P@1 against wall time on Amazon-670K-shaped data for
SLIDE's plain configuration, + in-batch negatives, + rehash_min_updates, in one run.

    python -m benches.ablation_amazon670k            # 80k training samples, ~3 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

CONFIGS = {
    "slide_paper (no batch negatives, rehash every changed neuron)": dict(batch_negatives=0, rehash_min_updates=1),
    "+ batch_negatives=64": dict(batch_negatives=64, rehash_min_updates=1),
    "+ batch_negatives=64, rehash_min_updates=4 (default)": dict(batch_negatives=64, rehash_min_updates=4),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", type=int, default=80_000)
    p.add_argument("--chunks", type=int, default=4, help="evaluations along the run")
    p.add_argument("--test", type=int, default=1_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULTS / "ablation_amazon670k.json")
    args = p.parse_args()

    import slide
    from slide.datasets import synthetic_amazon670k

    from .environment import describe

    train, test = synthetic_amazon670k(n_train=args.train, n_test=args.test, seed=0)
    chunk = args.train // args.chunks
    runs = {}
    for name, overrides in CONFIGS.items():
        net = slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(128,), lsh=slide.LSHConfig(**overrides),
                            learning_rate=1e-3, threads=args.threads, seed=0)
        start = net.table_stats()["layers.0"]
        curve, seconds = [], 0.0
        for c in range(args.chunks):
            rows = slice(c * chunk, (c + 1) * chunk)
            h = net.fit(train.X[rows], train.Y[rows], epochs=1, batch_size=256, progress=False)
            seconds += h[0]["seconds"]
            curve.append({"samples": (c + 1) * chunk, "train_seconds": seconds,
                          "P@1": net.evaluate(test.X, test.Y)["P@1"]})
        end = net.table_stats()["layers.0"]
        top1 = net.predict(test.X, k=1)[0][:, 0]
        runs[name] = {
            "lsh": slide.LSHConfig(**overrides).to_dict(),
            "curve": curve,
            "active_per_sample": h[0]["active_per_sample"],
            "table_maintenance_seconds": end["maintenance_seconds"] - start["maintenance_seconds"],
            "rehashed_neurons": end["rehashed_neurons"] - start["rehashed_neurons"],
            "sparse_inference_P@1": net.evaluate(test.X, test.Y, mode="sparse")["P@1"],
            "largest_share_of_test_points_with_one_top1_label": float(
                most_common_count(top1) / len(top1)),
        }
        print(name, json.dumps(runs[name]["curve"]), flush=True)
    result = {"benchmark": "ablation_amazon670k", "train": args.train, "test": args.test,
              "environment": describe(args.threads), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(args.out)


def most_common_count(ids) -> int:
    import numpy as np

    return int(np.unique(ids, return_counts=True)[1].max())


if __name__ == "__main__":
    main()
