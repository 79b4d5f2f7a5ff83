"""`slide data info|check NAME_OR_FILE`: statistics, and a full validation pass."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..datasets import registry
from ..datasets.synthetic import Split
from ..datasets.xc_files import load_xc


def add_parser(sub) -> None:
    d = sub.add_parser("data", help="inspect or validate a dataset or file")
    d.add_argument("action", choices=["info", "check"])
    d.add_argument("target", help="a dataset name or an Extreme Classification file")
    d.add_argument("--data-dir")
    d.set_defaults(handler=main)


def _files(target: str, data_dir) -> list[Path]:
    if target in registry.DATASETS:
        info = registry.get(target)
        if info.kind == "synthetic":
            raise ValueError(f"{target!r} is generated on demand; there are no files to inspect")
        train, test = registry.locate(info, registry.data_dir(data_dir))
        return [p for p in (train, test) if p is not None]
    path = Path(target)
    if not path.exists():
        raise FileNotFoundError(f"{target!r} is neither a known dataset ({', '.join(registry.DATASETS)}) nor a file")
    return [path]


def describe(split: Split) -> str:
    nnz = np.diff(split.X.indptr)
    labels = np.diff(split.Y.indptr)
    freq = np.sort(np.bincount(split.Y.indices, minlength=split.Y.shape[1]))[::-1]
    head = freq[: max(1, len(freq) // 100)].sum() / max(freq.sum(), 1)
    return (f"{len(split):,} points, {split.X.shape[1]:,} features, {split.Y.shape[1]:,} labels; "
            f"{nnz.mean() if len(nnz) else 0:.2f} nonzeros/point, {labels.mean() if len(labels) else 0:.2f} labels/point, "
            f"{(labels == 0).sum():,} points without labels, {(freq > 0).sum():,} labels used, "
            f"top 1% of labels hold {head:.1%} of assignments")


def main(args: argparse.Namespace) -> int:
    for path in _files(args.target, args.data_dir):
        if path.name in ("text8", "text8.txt", "text8.gz"):
            from ..datasets.text8 import load_text8

            c = load_text8(path, cache=args.action == "info")
            print(f"{path}: ok, {len(c.ids):,} words, vocabulary {c.vocab_size:,}")
            continue
        split = load_xc(path, cache=args.action == "info")  # check: parse the text itself, not a cache
        print(f"{path}: ok, {describe(split)}" if args.action == "check" else f"{path}: {describe(split)}")
    if args.action == "info" and args.target in registry.DATASETS:
        info = registry.get(args.target)
        print(f"expected: {info.stats}\nsource: {info.source}")
    return 0
