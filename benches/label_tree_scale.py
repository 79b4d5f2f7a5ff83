"""The label tree at Amazon-670K's shape (135,909 features, 670,091 labels), as `slide train`
trains it after the network when every point is in memory (`Network.fit_label_tree`): each
stage's seconds and how far it lifts resident memory above where it started (sampled every 20 ms):
the labels' PIFA vectors, the tree's shape (balanced 2-means), each classifier's points, the
classifiers' solve; then beam search for the test points' top 5 and the tree's P@k alone. Catalogue
data of the exact shape (the real file cannot be downloaded here): this measures cost, not accuracy
(the real-data suite judges accuracy). Leaves of `--leaf-size` labels (the LSH preset's 32).

    python -m benches.label_tree_scale                  # 490,449 training points
    python -m benches.label_tree_scale --train 100000   # a quicker look

Writes benches/results/label_tree_scale.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .environment import describe
from .reranker_scale import AMAZON_TRAIN, FEATURES, LABELS, RESULTS, PeakMemory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=AMAZON_TRAIN)
    ap.add_argument("--test", type=int, default=5_000)
    ap.add_argument("--leaf-size", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "label_tree_scale.json")
    args = ap.parse_args()

    import numpy as np

    from slide._core import sparse_dual_cd
    from slide.datasets.catalogue import make_catalogue
    from slide.datasets.synthetic import unit_rows
    from slide.label_tree import LEAF_SIZE, LabelTree
    from slide.label_tree.clustering import build_shape, label_vectors
    from slide.label_tree.node_points import task_points
    from slide.label_tree.tree import C, MAX_ITERATIONS, THRESHOLD, TOLERANCE
    from slide.metrics import ranking_report

    leaf_size = args.leaf_size or LEAF_SIZE
    memory, stages = PeakMemory(), {}
    data = memory.stage("generate", lambda: make_catalogue(args.train + args.test, FEATURES, LABELS, seed=args.seed),
                        stages)
    X, Y = data.X.tocsr(), data.Y.tocsr()
    Xtr, Ytr, Xte, Yte = unit_rows(X[:args.train]), Y[:args.train], X[args.train:], Y[args.train:]
    del data, X, Y
    vectors = memory.stage("label vectors (PIFA)", lambda: label_vectors(Xtr, Ytr), stages)
    shape = memory.stage("shape (balanced 2-means)", lambda: build_shape(vectors, leaf_size, args.seed, args.threads),
                         stages)
    del vectors
    indptr, rows, positive = memory.stage("each classifier's points", lambda: task_points(shape, Ytr), stages)
    solved = memory.stage("classifiers (squared hinge)", lambda: sparse_dual_cd(
        Xtr.indptr, Xtr.indices, Xtr.data, FEATURES, indptr, rows, positive, C, MAX_ITERATIONS, TOLERANCE, args.seed,
        THRESHOLD, args.threads), stages)
    pairs = int(rows.size)
    del indptr, rows, positive
    tree = LabelTree(shape, *solved[:4], FEATURES, LABELS)
    ids, _ = memory.stage(f"beam search, {args.test:,} test points' top 5", lambda: tree.top(Xte, 5, threads=args.threads),
                          stages)
    scores = {k: round(v, 4) for k, v in ranking_report(ids, Yte, (1, 3, 5)).items()}
    print(scores, flush=True)
    fit_seconds = sum(stages[k]["seconds"] for k in stages if k not in ("generate",) and not k.startswith("beam"))
    report = {"benchmark": "label_tree_scale", "environment": describe(args.threads),
              "protocol": __doc__.split("\n\n")[0],
              "shape": {"features": FEATURES, "labels": LABELS, "train": args.train, "test": args.test,
                        "train_nnz": int(Xtr.nnz), "train_labels_per_point": round(Ytr.nnz / args.train, 3)},
              "leaf_size": leaf_size, "nodes": int(shape.nodes), "classifier_point_pairs": pairs,
              "weights_kept": int(solved[2].size), "weights_mib": round((solved[1].nbytes + solved[2].nbytes) / 2**20, 1),
              "hinge_mean_loss": round(float(solved[4]), 5), "fit_seconds": round(fit_seconds, 2), "stages": stages,
              "tree_alone_test_scores": scores, "labels_reached": int(np.count_nonzero(np.bincount(
                  ids[ids >= 0].ravel(), minlength=LABELS)))}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
