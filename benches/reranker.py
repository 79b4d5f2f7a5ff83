"""What the shortlist re-ranker buys (slide.reranker), on one set of the real-data suite: the
network `slide train` picks for the data's shape (slide.shape_defaults), trained once without the
vote or a re-ranker, its best epoch picked on 2% of the training points held out; then one
re-ranker per variant (shortlist, epochs, table size) trained on the rest, fused at the weight that
does best on the held-out points, and scored on the whole test set. Same threads, one run.

    python -m benches.real_suite --build-only          # the suite's data, outside the repository
    python -m benches.reranker [--data-dir DIR] [--set debian-deps] [--threads 2]

Writes benches/results/reranker.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .environment import describe
from .real_suite.files import DEFAULT_DATA_DIR, built_sets

RESULTS = Path(__file__).resolve().parent / "results"
# (shortlist, epochs, log2 of the table's slots); the first is slide's default.
VARIANTS = ((25, 3, 24), (10, 3, 24), (50, 3, 24), (25, 1, 24), (25, 5, 24), (25, 3, 22), (25, 3, 26))


def network(train, threads: int, seed: int):
    """(the shape's default network without vote or re-ranker, trained; the held-out pair; seconds)."""
    from .default_network import default_network

    n = train.X.shape[0]
    net, cfg, _ = default_network(train.X.shape[1], train.Y.shape[1], threads, seed, n, neighbours=0, rerank=0)
    order = np.random.default_rng(seed).permutation(n)
    held = max(1, int(n * (cfg.get("validation_split") or 0.02)))
    val, fit = np.sort(order[:held]), np.sort(order[held:])
    t0 = time.perf_counter()
    net.fit(train.X[fit], train.Y[fit], epochs=cfg["epochs"], batch_size=cfg["batch_size"],
            validation_data=(train.X[val], train.Y[val]), early_stopping=cfg.get("early_stopping"),
            progress=False)
    return net, (train.X[fit], train.Y[fit]), (train.X[val], train.Y[val]), time.perf_counter() - t0


def variant(net, fit, val, test, shortlist: int, epochs: int, bits: int, candidates: dict) -> dict:
    from slide.reranker import ShortlistReranker

    t0 = time.perf_counter()
    if shortlist not in candidates:
        candidates[shortlist] = (net.ranks.top_k(net, fit[0], shortlist, True)[0], time.perf_counter() - t0)
    ids, shortlist_seconds = candidates[shortlist]
    t1 = time.perf_counter()
    net.reranker = ShortlistReranker(net.input_dim, net.output_dim, shortlist, bits=bits)
    net.rerank = shortlist
    net.reranker.fit(*fit, ids, epochs=epochs, threads=net.threads, seed=net.seed)
    fit_seconds = time.perf_counter() - t1
    net.tune_fusion_weights(*val)
    report = net.evaluate(test.X, test.Y)
    return {"shortlist": shortlist, "epochs": epochs, "bits": bits, "rerank_weight": net.rerank_weight,
            "shortlist_seconds": round(shortlist_seconds, 2), "fit_seconds": round(fit_seconds, 2),
            **{k: report[k] for k in ("P@1", "P@3", "P@5")}}


def main() -> None:
    from slide.datasets.xc_files import load_xc

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--set", default="debian-deps")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "reranker.json")
    args = ap.parse_args()
    folder, = built_sets(args.data_dir, [args.set])
    train, test = load_xc(folder / "train.txt"), load_xc(folder / "test.txt")
    net, fit, val, seconds = network(train, args.threads, args.seed)
    alone = net.evaluate(test.X, test.Y)
    print(f"network alone: P@1 {alone['P@1']:.4f} P@5 {alone['P@5']:.4f}, {seconds:.1f}s", flush=True)
    candidates: dict = {}
    rows = []
    for shortlist, epochs, bits in VARIANTS:
        rows.append(variant(net, fit, val, test, shortlist, epochs, bits, candidates))
        print(rows[-1], flush=True)
    report = {"benchmark": "reranker", "environment": describe(args.threads), "protocol": __doc__.split("\n\n")[0],
              "set": args.set, "train": int(fit[0].shape[0]), "validation": int(val[0].shape[0]),
              "test": int(test.X.shape[0]), "labels": int(train.Y.shape[1]), "network_seconds": round(seconds, 2),
              "network_alone": {k: alone[k] for k in ("P@1", "P@3", "P@5")}, "variants": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
