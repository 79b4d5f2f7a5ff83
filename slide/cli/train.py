"""`slide train`: resolve the configuration (preset <- --config file <- flags), train with periodic
evaluation and checkpoints into a run folder, or resume one."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..config import LSHConfig
from ..network import Network, TrainingDiverged, TrainingInterrupted
from .. import runs
from .sources import resolve

NETWORK_KEYS = ("hidden", "learning_rate", "optimizer", "dense")
RUN_KEYS = ("epochs", "batch_size", "eval_every", "eval_samples", "checkpoint_every", "final_eval_samples",
            "on_divergence")
# Top-level settings of a run (the config file may also hold [network] and [lsh] tables).
TOP_KEYS = ("dataset", "train_file", "test_file", "data_dir", "train_samples", "test_samples", "threads", "seed",
            "text8", *RUN_KEYS)


def add_parser(sub) -> None:
    t = sub.add_parser("train", help="train a network and report P@1/3/5",
                       description="Train on a named dataset, on your own pair of files, or (default) on a small "
                                   "built-in problem. Results go to a run folder.")
    src = t.add_argument_group("data")
    src.add_argument("--dataset", help="default, synthetic-amazon670k, amazon670k, wikilsh325k, delicious200k, text8")
    src.add_argument("--train", dest="train_file", help="a training file in Extreme Classification format")
    src.add_argument("--test", dest="test_file", help="the matching test file")
    src.add_argument("--data-dir", help="where named datasets live (default: $SLIDE_DATA, then ~/.cache/slide/data)")
    src.add_argument("--train-samples", type=int, help="use only the first N training points")
    src.add_argument("--test-samples", type=int, help="use only N (shuffled) test points")
    run = t.add_argument_group("training")
    run.add_argument("--config", type=Path, help="a TOML file with any of these settings and [network], [lsh] tables")
    run.add_argument("--epochs", type=int)
    run.add_argument("--batch-size", type=int)
    run.add_argument("--lr", dest="learning_rate", type=float, help="learning rate")
    run.add_argument("--threads", type=int)
    run.add_argument("--seed", type=int)
    run.add_argument("--dense", action="store_true", default=None, help="full softmax instead of LSH sampling")
    run.add_argument("--eval-every", type=int, help="samples between evaluations on a test sample")
    run.add_argument("--eval-samples", type=int, help="test points in a periodic evaluation (default 2,000)")
    run.add_argument("--checkpoint-every", type=float, help="seconds between checkpoints (default 600)")
    run.add_argument("--on-divergence", choices=("stop", "backoff"),
                     help="when the loss or weights become NaN/inf: stop (default), or reload the last good "
                          "checkpoint and halve the learning rate (up to 3 times)")
    run.add_argument("--out", type=Path, help="the run folder (default: ./slide-runs/<dataset>-<time>)")
    run.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(handler=main)


def _read_toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    if not path.is_file():
        raise FileNotFoundError(f"no config file at {path}")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None


def resolve_config(args: argparse.Namespace) -> dict[str, Any]:
    """Preset of the dataset, then the TOML file, then command-line flags."""
    file_cfg = _read_toml(args.config) if args.config else {}
    known = {*TOP_KEYS, "network", "lsh"}
    unknown = set(file_cfg) - known
    if unknown:
        raise ValueError(f"{args.config}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
    flags = {k: v for k, v in vars(args).items() if v is not None}
    cfg: dict[str, Any] = {"dataset": "default", "seed": 0}
    for source in (file_cfg, flags):
        for k in TOP_KEYS:
            if k in source:
                cfg[k] = source[k]
    if flags.get("train_file"):
        cfg.pop("dataset", None)
    from ..datasets import registry

    preset = registry.SLIDE_PRESET if cfg.get("train_file") else registry.get(cfg["dataset"]).preset
    network = {"hidden": list(preset["hidden"]), "learning_rate": preset["learning_rate"], "optimizer": "adam",
               "dense": False, **file_cfg.get("network", {})}
    network.update({k: flags[k] for k in NETWORK_KEYS if k in flags})
    lsh = {**preset["lsh"], **file_cfg.get("lsh", {})}
    cfg["network"], cfg["lsh"] = network, lsh
    cfg.setdefault("epochs", preset["epochs"])
    cfg.setdefault("batch_size", preset["batch_size"])
    cfg.setdefault("eval_samples", 2000)
    cfg.setdefault("checkpoint_every", 600.0)
    return cfg


def build_network(cfg: dict, source) -> Network:
    net_cfg = cfg["network"]
    unknown = set(net_cfg) - set(NETWORK_KEYS)
    if unknown:
        raise ValueError(f"unknown [network] settings {sorted(unknown)}; known: {list(NETWORK_KEYS)}")
    try:
        lsh = None if net_cfg["dense"] else LSHConfig(**cfg["lsh"])
    except TypeError as e:
        raise ValueError(f"bad [lsh] settings: {e}") from None
    return Network(source.input_dim, source.output_dim, hidden=tuple(net_cfg["hidden"]), lsh=lsh,
                   optimizer=net_cfg["optimizer"], learning_rate=net_cfg["learning_rate"],
                   threads=cfg.get("threads"), seed=cfg["seed"])


def main(args: argparse.Namespace) -> int:
    if args.resume:
        run_dir = args.resume
        cfg = runs.read_config(run_dir)
        if args.epochs:
            cfg["epochs"] = args.epochs
        source = resolve(cfg)
        if (run_dir / runs.CHECKPOINT).exists():
            net, pos = runs.load_checkpoint(run_dir, threads=args.threads)
            print(f"resuming {run_dir} at epoch {pos.epoch + 1}, {pos.samples:,} samples trained", flush=True)
        else:  # killed before its first checkpoint: the seed reproduces the start exactly
            if args.threads:
                cfg["threads"] = args.threads
            net, pos = build_network(cfg, source), None
            print(f"{run_dir} has no checkpoint yet; starting its run from the beginning", flush=True)
    else:
        cfg = resolve_config(args)
        source = resolve(cfg)
        net = build_network(cfg, source)
        run_dir = args.out or Path("slide-runs") / f"{source.title}-{time.strftime('%Y%m%d-%H%M%S')}"
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg["resolved_threads"] = net.threads
        runs.write_config(run_dir, cfg)
        pos = None
    stream = source.make_stream(net, cfg["seed"])
    eval_every = cfg.get("eval_every") or max(cfg["batch_size"], stream.samples_per_epoch // 4)
    print(f"{net}, {net.memory_bytes / 2**30:.2f} GiB; run folder {run_dir}", flush=True)
    settings = runs.RunSettings(epochs=cfg["epochs"], batch_size=cfg["batch_size"], eval_every=eval_every,
                                eval_samples=cfg["eval_samples"], checkpoint_every=cfg["checkpoint_every"],
                                final_eval_samples=cfg.get("final_eval_samples"),
                                on_divergence=args.on_divergence or cfg.get("on_divergence", "stop"),
                                progress=not args.quiet)
    try:
        final = runs.run(net, stream, source.test, run_dir, settings, pos, title=source.title)
    except TrainingInterrupted:
        print(f"\ninterrupted: checkpoint saved; continue with `slide train --resume {run_dir}`", file=sys.stderr)
        return 130
    except TrainingDiverged as e:
        print(f"slide: error: {e}", file=sys.stderr)
        return 3
    print("test (exact, {:,} points): ".format(final["test_points"]) +
          ", ".join(f"{k} {final[k]:.4f}" for k in ("P@1", "P@3", "P@5")), flush=True)
    print(f"saved {run_dir / runs.MODEL}")
    return 0

