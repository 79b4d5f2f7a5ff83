"""What the nearest-neighbour vote buys (slide.neighbours): slide's default configuration for the
data's shape (slide.shape_defaults, including its validation split, which picks the best epoch and
the vote's weight), scored as the network alone, as the vote alone (k nearest training points, no
network) and fused, next to omikuji with its defaults; same threads, one run. P@k, nDCG@k and
PSP@k on the whole test set; training and prediction seconds.

    pip install omikuji
    python -m benches.neighbours                       # catalogue-amazon670k, 100k train / 10k test
    python -m benches.neighbours --data-dir DIR        # also Bibtex and Delicious (benches.xc_real)

Writes benches/results/neighbours.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"


def top_of_votes(votes, k: int) -> np.ndarray:
    """The k labels with the largest vote per row (-1 where fewer have a vote)."""
    ids = np.full((votes.shape[0], k), -1, np.int64)
    for i in range(votes.shape[0]):
        row = slice(votes.indptr[i], votes.indptr[i + 1])
        order = np.argsort(-votes.data[row], kind="stable")[:k]
        ids[i, :order.size] = votes.indices[row][order]
    return ids


def run_slide(train, test, threads: int, seed: int) -> dict:
    from slide.neighbours import NeighbourMemory

    from .default_network import default_network

    net, cfg, why = default_network(train.X.shape[1], train.Y.shape[1], threads, seed)
    t0 = time.perf_counter()
    history = net.fit(train.X, train.Y, epochs=cfg["epochs"], batch_size=cfg["batch_size"],
                      validation_split=cfg.get("validation_split") or 0.0, progress=False)
    seconds = time.perf_counter() - t0
    out = {"settings": why, "train_seconds": round(seconds, 2), "best_epoch": history.best_epoch,
           "neighbour_weight": net.neighbour_weight,
           "neighbour_weight_scores": {str(w): round(v, 4) for w, v in (history.neighbour_weight_scores or {}).items()},
           "ids": {}, "predict_seconds": {}}
    for name, use in (("network alone", False), ("fused", True)):
        t0 = time.perf_counter()
        out["ids"][name] = net.predict(test.X, k=5, use_neighbours=use)[0]
        out["predict_seconds"][name] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    memory = NeighbourMemory(train.X, train.Y)  # all training points, as the fused model's memory
    out["ids"]["vote alone"] = top_of_votes(memory.votes(test.X, net.neighbours), 5)
    out["predict_seconds"]["vote alone"] = round(time.perf_counter() - t0, 2)
    return out


def run_omikuji(train, test, threads: int, seed: int) -> dict:
    from .tree_baselines import TREES

    model = TREES["omikuji"](threads, seed)
    t0 = time.perf_counter()
    model.fit(train.X, train.Y)
    seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    ids = model.top_k(test.X, 5)
    return {"train_seconds": round(seconds, 2), "ids": {"omikuji": ids},
            "predict_seconds": {"omikuji": round(time.perf_counter() - t0, 2)}, "hyper_param": model.hyper_param}


def datasets(args):
    from slide.datasets import catalogue_amazon670k

    yield "catalogue-amazon670k", catalogue_amazon670k(args.train_samples, args.test_samples, seed=args.seed), \
        (0.6, 2.6)
    if args.data_dir is not None:
        from .xc_real import load

        for name in ("bibtex", "delicious"):
            yield name, load(args.data_dir, name), (0.55, 1.5)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, help="holds bibtex-{train,test}.arff + bibtex.xml, delicious-...")
    ap.add_argument("--train-samples", type=int, default=100_000)
    ap.add_argument("--test-samples", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-omikuji", action="store_true")
    args = ap.parse_args()
    from slide.metrics import inverse_propensities, xc_report

    report = {"environment": describe(args.threads), "protocol": __doc__.split("\n\n")[0], "results": {}}
    for name, (train, test), (a, b) in datasets(args):
        inv = inverse_propensities(train.Y, a, b)
        entry = report["results"][name] = {"train": len(train), "test": len(test), "features": train.X.shape[1],
                                           "labels": train.Y.shape[1], "propensity": [a, b], "systems": {}}
        runs = [run_slide] + ([] if args.no_omikuji else [run_omikuji])
        for run in runs:
            out = run(train, test, args.threads, args.seed)
            for system, ids in out.pop("ids").items():
                metrics = xc_report(ids, test.Y, inv)
                seconds = out["predict_seconds"][system]
                entry["systems"][system] = {**{k: v for k, v in out.items() if k != "predict_seconds"},
                                            "predict_seconds": seconds,
                                            **{k: round(v, 4) for k, v in metrics.items()}}
                print(f"{name:22s} {system:14s} train {out['train_seconds']:7.1f}s predict {seconds:6.1f}s  " +
                      "  ".join(f"{k} {metrics[k]:.4f}" for k in ("P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5")),
                      flush=True)
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / "neighbours.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
