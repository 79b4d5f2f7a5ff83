"""`slide data info|check NAME_OR_FILE`: statistics, and a full validation pass;
`slide data convert FILE DIR`: an XC file into a shard folder, streamed with bounded memory."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from tqdm import tqdm

from ..datasets import registry
from ..datasets.convert import convert_xc
from ..datasets.shards import DEFAULT_SHARD_ROWS
from ..datasets.synthetic import Split
from ..datasets.xc_files import load_xc


def add_parser(sub) -> None:
    d = sub.add_parser("data", help="inspect or validate a dataset or file")
    d.add_argument("action", choices=["info", "check", "convert"],
                   help="info: statistics; check: parse everything; convert: write FILE as a shard folder OUT")
    d.add_argument("target", help="a dataset name or an Extreme Classification file (or shard folder)")
    d.add_argument("out", nargs="?", type=Path, help="convert: the shard folder to write (new, empty, or an "
                   "earlier conversion)")
    d.add_argument("--shard-rows", type=int, default=DEFAULT_SHARD_ROWS, help="convert: points per shard "
                   f"(default {DEFAULT_SHARD_ROWS:,})")
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
    # Counts of the labels used only: sized by the content, never by the header's label count,
    # which a 5-line file may set to two billion.
    freq = np.sort(np.unique(split.Y.indices, return_counts=True)[1])[::-1]
    head = freq[: max(1, split.Y.shape[1] // 100)].sum() / max(freq.sum(), 1)
    return (f"{len(split):,} points, {split.X.shape[1]:,} features, {split.Y.shape[1]:,} labels; "
            f"{nnz.mean() if len(nnz) else 0:.2f} nonzeros/point, {labels.mean() if len(labels) else 0:.2f} labels/point, "
            f"{(labels == 0).sum():,} points without labels, {len(freq):,} labels used, "
            f"top 1% of labels hold {head:.1%} of assignments")


def convert(args: argparse.Namespace) -> int:
    if args.out is None:
        raise ValueError("slide data convert FILE OUT: name the shard folder to write")
    if args.shard_rows < 1:
        raise ValueError(f"--shard-rows must be at least 1, got {args.shard_rows}")
    source = Path(args.target)
    size = source.stat().st_size if source.is_file() else 0
    bar = tqdm(total=None, unit=" points", disable=not sys.stderr.isatty(), desc="converting")
    t0 = time.perf_counter()
    try:
        folder = convert_xc(source, args.out, shard_rows=args.shard_rows,
                            on_progress=lambda done, total: (setattr(bar, "total", total), bar.update(done - bar.n)))
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    print(f"{source}: {folder.num_points:,} points into {len(folder)} shards in {args.out} "
          f"({folder.payload_bytes / 1e6:,.0f} MB) in {seconds:.1f}s ({size / 1e6 / max(seconds, 1e-9):,.0f} MB/s)")
    return 0


def main(args: argparse.Namespace) -> int:
    if args.action == "convert":
        return convert(args)
    if args.out is not None:
        raise ValueError(f"slide data {args.action} takes one target; OUT is for convert")
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
