"""The shortlist re-ranker at Amazon-670K's shape (135,909 features, 670,091 labels), as `slide train`
trains it after the network when every point is in memory: each training point's exact top
HINGE_SHORTLIST_FACTOR x 25 labels (the int8 scan over all 670,091 outputs), each label's points
gathered (`label_points`), then each label's squared hinge solved (`fit_hinge`). Each stage's
seconds and how far it lifts resident memory above where it started (sampled every 20 ms), so that
a user with a full-size file knows what the re-ranker adds to a run. Catalogue data of the exact
shape (the real file cannot be downloaded here); the network is trained for one pass over
`--network-samples` points only, since this measures cost, not accuracy (the real-data suite
judges accuracy). Then the network's top 5 on the test points, alone and fused with the re-ranker
at weight 1, to show the result is used.

    python -m benches.reranker_scale                         # 490,449 training points (~15 min)
    python -m benches.reranker_scale --train 100000          # a quicker look

Writes benches/results/reranker_scale.json.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

from .environment import describe
from .soak_amazon670k import rss_bytes

RESULTS = Path(__file__).resolve().parent / "results"
FEATURES, LABELS, AMAZON_TRAIN = 135_909, 670_091, 490_449


class PeakMemory:
    """Samples resident memory on a daemon thread; `stage` runs a function and reports its seconds
    and the highest RSS seen while it ran."""

    def __init__(self, every: float = 0.02) -> None:
        self.peak = rss_bytes()
        self._every = every
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_bytes())
            time.sleep(self._every)

    def stage(self, name: str, run: Callable[[], Any], log: dict) -> Any:
        before = rss_bytes()
        self.peak = before
        t0 = time.perf_counter()
        out = run()
        seconds = time.perf_counter() - t0
        self.peak = max(self.peak, rss_bytes())
        log[name] = {"seconds": round(seconds, 2), "rss_before_gib": round(before / 2**30, 3),
                     "peak_rss_gib": round(self.peak / 2**30, 3), "lift_gib": round((self.peak - before) / 2**30, 3)}
        print(f"{name}: {seconds:.1f} s, RSS {before / 2**30:.2f} -> peak {self.peak / 2**30:.2f} GiB", flush=True)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=AMAZON_TRAIN)
    ap.add_argument("--test", type=int, default=5_000)
    ap.add_argument("--network-samples", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "reranker_scale.json")
    args = ap.parse_args()

    from slide.datasets.catalogue import make_catalogue
    from slide.metrics import ranking_report
    from slide.prediction.fused import VotedNetwork
    from slide.prediction.reranker_training import shortlists
    from slide.reranker import HINGE_SHORTLIST_FACTOR, ShortlistReranker, label_points
    from slide.shape_defaults import RERANK_SHORTLIST

    from .default_network import default_network

    memory, stages = PeakMemory(), {}
    data = memory.stage("generate", lambda: make_catalogue(args.train + args.test, FEATURES, LABELS, seed=args.seed),
                        stages)
    X, Y = data.X.tocsr(), data.Y.tocsr()
    Xtr, Ytr, Xte, Yte = X[:args.train], Y[:args.train], X[args.train:], Y[args.train:]
    del data, X, Y
    net, cfg, why = default_network(FEATURES, LABELS, args.threads, args.seed, args.train, neighbours=0, rerank=0)
    print(why, flush=True)
    seen = min(args.network_samples, args.train)
    memory.stage("network, one pass", lambda: net.fit(Xtr[:seen], Ytr[:seen], epochs=1, batch_size=cfg["batch_size"],
                                                      progress=False), stages)
    width = HINGE_SHORTLIST_FACTOR * RERANK_SHORTLIST
    candidates = memory.stage(f"training shortlists (exact top {width})", lambda: shortlists(net, Xtr, width), stages)
    pairs = memory.stage("label_points", lambda: label_points(candidates, Ytr, LABELS), stages)[1].size
    reranker = ShortlistReranker(FEATURES, LABELS, RERANK_SHORTLIST)
    loss = memory.stage("fit_hinge", lambda: reranker.fit_hinge(Xtr, Ytr, candidates, threads=args.threads,
                                                                seed=args.seed), stages)
    fused = VotedNetwork(net, None, 0, reranker)
    tops = memory.stage("test top 5 with the re-ranker", lambda: fused.fusion(Xte, 5, True)[0], stages)
    scores = {f"rerank weight {w:g}": {k: round(v, 4) for k, v in ranking_report(tops.top(0.0, 5, w)[0], Yte,
                                                                              (1, 3, 5)).items()}
              for w in (0.0, 1.0)}
    print(scores, flush=True)
    report = {"benchmark": "reranker_scale", "environment": describe(args.threads), "protocol": __doc__.split("\n\n")[0],
              "shape": {"features": FEATURES, "labels": LABELS, "train": args.train, "test": args.test,
                        "train_nnz": int(Xtr.nnz), "train_labels_per_point": round(Ytr.nnz / args.train, 3)},
              "network": {"why": why, "samples_seen": seen}, "training_list_width": width,
              "label_point_pairs": int(pairs), "hinge_mean_loss": round(float(loss), 5), "stages": stages,
              "test_scores": scores}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
