"""Does the re-ranker's solver limit it? On sets of the real-data suite: the network `slide train`
picks for the data's shape, trained once without the vote or a re-ranker (best epoch picked on
the points its shape holds out: 2% above 8,192 labels, 5% below); then, on the same training shortlists (the network's 25
best labels and each point's own), two kinds of per-label linear classifiers over the words:
slide's re-ranker (Adagrad on the logistic loss, hashed weights, 3 epochs), and per label an
L2-regularised squared hinge solved by dual coordinate descent (liblinear through scikit-learn's
LinearSVC, C=1, tolerance 0.1: what omikuji and Parabel train at their leaves), exact weights.
Each is fused with the network's logits on its 25 best labels (logit + weight x score, the
weight picked on the same held-out points); no vote. A label whose shortlisted points are all
positive (or all negative) gets the constant score +1 (-1). Same threads, one run.

    python -m benches.real_suite --build-only          # the suite's data, outside the repository
    pip install scikit-learn
    python -m benches.reranker_solver [--data-dir DIR] [--sets debian-tags debian-deps] [--threads 2]

Writes benches/results/reranker_solver.json.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .environment import describe
from .real_suite.files import DEFAULT_DATA_DIR, built_sets
from .reranker import network

RESULTS = Path(__file__).resolve().parent / "results"
SHORTLIST = 25
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # slide.reranker.WEIGHTS and one more: the solvers' scales differ


def _pairs(candidates: np.ndarray, Y: sp.csr_matrix) -> sp.csr_matrix:
    """labels x rows, 1 where the row is one of the label's training points: the label is on the
    row's shortlist or is one of its labels."""
    n = candidates.shape[0]
    rows = np.concatenate([np.repeat(np.arange(n), candidates.shape[1]), np.repeat(np.arange(n), np.diff(Y.indptr))])
    labels = np.concatenate([candidates.ravel(), Y.indices])
    keep = labels >= 0
    pairs = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (labels[keep], rows[keep])), shape=(Y.shape[1], n))
    pairs.data[:] = 1.0
    return pairs


class PerLabelHinge:
    """One LinearSVC per label over its shortlisted points; `score(X, ids)` scores each (row, id)."""

    def __init__(self, X: sp.csr_matrix, Y: sp.csr_matrix, candidates: np.ndarray) -> None:
        from sklearn.svm import LinearSVC

        X = sp.csr_matrix(X, dtype=np.float64)
        X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)  # liblinear's index type
        Y = sp.csr_matrix(Y)
        pairs, by_label = _pairs(candidates, Y), Y.tocsc()
        self.weights: dict[int, np.ndarray] = {}
        self.bias = np.zeros(Y.shape[1], np.float32)
        positive = np.zeros(X.shape[0], bool)
        for label in range(Y.shape[1]):
            rows = pairs.indices[pairs.indptr[label]:pairs.indptr[label + 1]]
            if not len(rows):
                continue
            own = by_label.indices[by_label.indptr[label]:by_label.indptr[label + 1]]
            positive[own] = True
            y = positive[rows].astype(np.int8)
            positive[own] = False
            if y.min() == y.max():
                self.bias[label] = 1.0 if y[0] else -1.0
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # liblinear's "did not converge" at tolerance 0.1
                svm = LinearSVC(C=1.0, tol=0.1).fit(X[rows], y)
            self.weights[label] = svm.coef_.ravel().astype(np.float32)
            self.bias[label] = svm.intercept_[0]

    def score(self, X: sp.csr_matrix, ids: np.ndarray) -> np.ndarray:
        out = np.take(self.bias, np.maximum(ids, 0)).astype(np.float32)
        rows, places = np.nonzero(ids >= 0)
        for label in np.unique(ids[rows, places]):
            if int(label) in self.weights:
                at = ids[rows, places] == label
                out[rows[at], places[at]] += X[rows[at]] @ self.weights[int(label)]
        return out


def _fused_report(logits: np.ndarray, ids: np.ndarray, scores: np.ndarray, weight: float, Y: sp.csr_matrix) -> dict:
    from slide.metrics import ranking_report

    order = np.argsort(-(logits + np.float32(weight) * scores), axis=1, kind="stable")[:, :5]
    return ranking_report(np.take_along_axis(ids, order, axis=1), Y, (1, 3, 5))


def per_label_hinge(net, fit, val, test, candidates: np.ndarray) -> dict:
    t0 = time.perf_counter()
    model = PerLabelHinge(*fit, candidates)
    fit_seconds = time.perf_counter() - t0
    shortlisted = {}
    for name, (X, Y) in (("val", val), ("test", (test.X, test.Y))):
        ids, logits = net.predict(X, k=SHORTLIST, use_neighbours=False)
        shortlisted[name] = (logits, ids, model.score(X, ids), Y)
    weight = max(WEIGHTS, key=lambda w: (_fused_report(*shortlisted["val"][:3], w, shortlisted["val"][3])["P@1"], -w))
    report = _fused_report(*shortlisted["test"][:3], weight, shortlisted["test"][3])
    return {"solver": "per-label squared hinge, dual coordinate descent (liblinear), C=1", "weight": weight,
            "fit_seconds": round(fit_seconds, 2), "labels_with_weights": len(model.weights),
            **{k: report[k] for k in ("P@1", "P@3", "P@5")}}


def _slide_reranker(net, val, test, solver: str, train) -> dict:
    """slide's re-ranker trained by `train(reranker)`, fused at the weight `tune_fusion_weights` picks."""
    from slide.reranker import WEIGHTS as RERANK_WEIGHTS, ShortlistReranker

    t0 = time.perf_counter()
    net.reranker, net.rerank = ShortlistReranker(net.input_dim, net.output_dim, SHORTLIST), SHORTLIST
    train(net.reranker)
    fit_seconds = time.perf_counter() - t0
    net.tune_fusion_weights(*val)
    report = net.evaluate(test.X, test.Y)
    weight = net.rerank_weight
    net.reranker, net.rerank = None, 0
    return {"solver": solver, "weight": weight, "weights_tried": list(RERANK_WEIGHTS),
            "fit_seconds": round(fit_seconds, 2), **{k: report[k] for k in ("P@1", "P@3", "P@5")}}


def adagrad_logistic(net, fit, val, test, candidates: np.ndarray) -> dict:
    return _slide_reranker(net, val, test, "slide's re-ranker: logistic loss, Adagrad, hashed weights, 3 epochs",
                           lambda r: r.fit(*fit, candidates, threads=net.threads, seed=net.seed))


def engine_hinge(net, fit, val, test, candidates: np.ndarray) -> dict:
    """The same squared hinge by slide's own dual coordinate descent over the hashed weights."""
    return _slide_reranker(net, val, test,
                           "per-label squared hinge, slide's dual coordinate descent over the hashed weights, C=1",
                           lambda r: r.fit_hinge(*fit, candidates, threads=net.threads, seed=net.seed))


def one_set(folder: Path, threads: int, seed: int) -> dict:
    from slide.datasets.xc_files import load_xc

    train, test = load_xc(folder / "train.txt"), load_xc(folder / "test.txt")
    net, fit, val, seconds = network(train, threads, seed)
    alone = net.evaluate(test.X, test.Y)
    t0 = time.perf_counter()
    candidates = net.ranks.top_k(net, fit[0], SHORTLIST, True)[0]
    shortlist_seconds = time.perf_counter() - t0
    rows = [adagrad_logistic(net, fit, val, test, candidates), per_label_hinge(net, fit, val, test, candidates),
            engine_hinge(net, fit, val, test, candidates)]
    return {"train": int(fit[0].shape[0]), "validation": int(val[0].shape[0]), "test": int(test.X.shape[0]),
            "labels": int(train.Y.shape[1]), "network_seconds": round(seconds, 2),
            "shortlist_seconds": round(shortlist_seconds, 2),
            "network_alone": {k: alone[k] for k in ("P@1", "P@3", "P@5")}, "solvers": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--sets", nargs="+", default=["debian-tags", "debian-deps"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "reranker_solver.json")
    args = ap.parse_args()
    sets = {}
    for folder in built_sets(args.data_dir, args.sets):
        sets[folder.name] = one_set(folder, args.threads, args.seed)
        print(folder.name, json.dumps(sets[folder.name]), flush=True)
    report = {"benchmark": "reranker_solver", "environment": describe(args.threads),
              "protocol": __doc__.split("\n\n")[0], "shortlist": SHORTLIST, "sets": sets}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
