"""`slide evaluate RUN_DIR_OR_MODEL`: P@1/3/5 and nDCG of a saved model on a dataset's test split."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..datasets.pieces import read_pieces
from ..network import Network
from .. import runs
from ..settings import RUN
from .sources import limit, resolve, shuffled


def add_parser(sub) -> None:
    e = sub.add_parser("evaluate", help="evaluate a run folder or model file on test data")
    e.add_argument("model", type=Path, help="a run folder (its model, else its checkpoint) or a model file")
    e.add_argument("--dataset", help="a named dataset (default: the run's own)")
    e.add_argument("--test", dest="test_file", help="a test file in Extreme Classification format")
    e.add_argument("--data-dir")
    e.add_argument("--test-samples", type=int, help="evaluate on N shuffled test points")
    e.add_argument("--mode", choices=["dense", "sparse"], default="dense", help="exact (default) or LSH-sparse")
    e.add_argument("--threads", type=int)
    e.add_argument("--json", action="store_true", help="print the report as JSON")
    e.set_defaults(handler=main)


def model_path(path: Path) -> Path:
    if path.is_dir():
        for name in (runs.MODEL, runs.CHECKPOINT):
            if (path / name).exists():
                return path / name
        raise FileNotFoundError(f"{path} holds neither {runs.MODEL} nor {runs.CHECKPOINT}")
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    return path


def main(args: argparse.Namespace) -> int:
    for name, flag in (("test_samples", "--test-samples"), ("threads", "--threads")):
        if getattr(args, name) is not None:
            RUN[name].check(getattr(args, name), flag)
    net = Network.load(model_path(args.model), threads=args.threads)
    cfg = runs.read_config(args.model) if args.model.is_dir() else {}
    if args.test_file and args.test_samples is None:  # the whole file, a piece at a time
        report, points = streamed_report(net, Path(args.test_file), args.mode)
        return _print(report, points, args)
    if args.test_file:
        from ..datasets.xc_files import load_xc

        test = limit(shuffled(load_xc(args.test_file), cfg.get("seed", 0)), args.test_samples)
    else:
        source_cfg = {**cfg, "dataset": args.dataset or cfg.get("dataset", "default"),
                      "train_file": None if args.dataset else cfg.get("train_file"),
                      "test_file": cfg.get("test_file"), "data_dir": args.data_dir or cfg.get("data_dir"),
                      "test_samples": args.test_samples or cfg.get("test_samples")}
        test = resolve(source_cfg).test
    return _print(net.evaluate(test.X, test.Y, mode=args.mode), len(test), args)


def streamed_report(net: Network, path: Path, mode: str) -> tuple[dict, int]:
    """The report over every point of `path`, read a piece at a time: each metric is a mean over
    points, so the pieces' means weighted by their sizes give it exactly."""
    sums: dict[str, float] = {}
    points = 0
    for piece in read_pieces(path):
        if len(piece) == 0:
            continue
        for k, v in net.evaluate(piece.X, piece.Y, mode=mode).items():
            sums[k] = sums.get(k, 0.0) + v * len(piece)
        points += len(piece)
    if points == 0:
        raise ValueError(f"{path} holds no points to evaluate on")
    return {k: v / points for k, v in sums.items()}, points


def _print(report: dict, points: int, args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{points:,} test points ({args.mode}): " + ", ".join(f"{k} {v:.4f}" for k, v in report.items()))
    return 0
