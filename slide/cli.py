"""The `slide` command line. `slide train` with no arguments trains on the small built-in problem."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from ._version import __version__

DATASETS = ("default", "synthetic-amazon670k")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="slide", description="Train LSH-sampled extreme classifiers on CPUs.")
    p.add_argument("--version", action="version", version=f"slide {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a network and report P@1/3/5")
    t.add_argument("--dataset", choices=DATASETS, default="default",
                   help="'default': a small generated problem (seconds); 'synthetic-amazon670k': generated data of "
                        "Amazon-670K's exact shape")
    t.add_argument("--train-samples", type=int, default=None, help="limit the training points (synthetic data)")
    t.add_argument("--test-samples", type=int, default=None, help="limit the test points (synthetic data)")
    t.add_argument("--epochs", type=int, default=None)
    t.add_argument("--batch-size", type=int, default=None)
    t.add_argument("--lr", type=float, default=None, help="learning rate")
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--dense", action="store_true", help="train the full softmax instead of the LSH-sampled layer")
    t.add_argument("--out", type=Path, default=None, help="write the model and metrics.json here")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _presets(dataset: str) -> dict:
    from .config import LSHConfig

    if dataset == "default":
        return dict(epochs=5, batch_size=128, lr=1e-3, hidden=(128,),
                    lsh=LSHConfig(k=3, l=50, rehash_every=2000, rebuild_every=20000))
    # The SLIDE paper's Amazon-670K configuration (with a larger step for our lazy Adam).
    return dict(epochs=1, batch_size=256, lr=1e-3, hidden=(128,), lsh=LSHConfig())


def train(args: argparse.Namespace) -> int:
    import numpy as np

    from . import Network
    from .datasets import small_default, synthetic_amazon670k

    preset = _presets(args.dataset)
    t0 = time.perf_counter()
    if args.dataset == "default":
        train_split, test_split = small_default(seed=args.seed)
    else:
        train_split, test_split = synthetic_amazon670k(n_train=args.train_samples or 490_449,
                                                       n_test=args.test_samples or 153_025, seed=args.seed)
    if args.train_samples:
        train_split.X, train_split.Y = train_split.X[:args.train_samples], train_split.Y[:args.train_samples]
    if args.test_samples:
        test_split.X, test_split.Y = test_split.X[:args.test_samples], test_split.Y[:args.test_samples]
    print(f"data: {args.dataset}, {len(train_split):,} train / {len(test_split):,} test points, "
          f"{train_split.X.shape[1]:,} features, {train_split.Y.shape[1]:,} labels "
          f"({time.perf_counter() - t0:.1f}s)")
    net = Network(train_split.X.shape[1], train_split.Y.shape[1], hidden=preset["hidden"],
                  lsh=None if args.dense else preset["lsh"], learning_rate=args.lr or preset["lr"],
                  threads=args.threads, seed=args.seed)
    print(f"{net}, {net.memory_bytes / 2**30:.2f} GiB")
    history = net.fit(train_split.X, train_split.Y, epochs=args.epochs or preset["epochs"],
                      batch_size=args.batch_size or preset["batch_size"], progress=not args.quiet)
    for e in history.epochs:
        print(f"epoch {e['epoch']}: loss {e['loss']:.4f}, {e['samples_per_second']:,.0f} samples/s, "
              f"{e['active_per_sample']:,.0f} active outputs/sample")
    report = net.evaluate(test_split.X, test_split.Y)
    print("test (exact): " + ", ".join(f"{k} {v:.4f}" for k, v in report.items()))
    if args.out is not None:
        from .model_file import atomic_write

        args.out.mkdir(parents=True, exist_ok=True)
        net.save(args.out / "model.npz")
        payload = json.dumps({"history": history.epochs, "test": report, "interrupted": history.interrupted},
                             indent=2).encode()
        atomic_write(args.out / "metrics.json", lambda f: f.write(payload))
        print(f"saved {args.out / 'model.npz'}")
    if history.interrupted:
        return 130
    return 0 if np.isfinite(report["P@1"]) else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="slide: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            return train(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"slide: error: {e}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
