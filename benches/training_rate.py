"""Timing training throughput on a noisy shared machine: each configuration builds a fresh network,
warms up, then times a fixed number of samples (table maintenance included); configurations run
round-robin `repeats` times so drift in the machine's load hits all of them alike, and each reports
the median of its runs."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Callable, Hashable

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--samples", type=int, default=25_600)
    ap.add_argument("--warmup", type=int, default=6_400)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)


def generated_data(args):
    """(X, Y) of Amazon-670K's shape with just the points the warm-up and timed samples need."""
    from slide.datasets import synthetic_amazon670k

    train, _ = synthetic_amazon670k(n_train=args.warmup + args.samples, n_test=1, seed=0)
    return train.X, train.Y


def modes() -> dict:
    """SLIDE's per-sample active sets and the batch-shared set of the comparison."""
    import slide

    from .compare.slide_system import BATCH_SHARED

    return {"per-sample (SLIDE)": slide.LSHConfig(), "batch-shared": BATCH_SHARED}


def write_report(name: str, args, threads: int, rows: list[dict]) -> None:
    """benches/results/<name>.json with the environment and the timing settings."""
    from .environment import describe

    report = {"benchmark": name, "environment": describe(threads), "samples": args.samples, "warmup": args.warmup,
              "batch_size": args.batch_size, "repeats": args.repeats, "results": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")


def samples_per_second(data, lsh, *, threads: int, warmup: int, samples: int, batch_size: int,
                       optimizer: str = "adam", precision: str = "fp32", matmul: str = "fp32") -> float:
    import slide

    X, Y = data
    net = slide.Network(X.shape[1], Y.shape[1], hidden=(128,), lsh=lsh, threads=threads, optimizer=optimizer,
                        precision=precision, matmul=matmul, seed=0)
    prepared = net.prepare(X, Y)
    rows = np.random.default_rng(0).permutation(X.shape[0])
    net.train_rows(prepared, rows[:warmup], batch_size=batch_size, lr=1e-3)
    t0 = time.perf_counter()
    net.train_rows(prepared, rows[warmup:warmup + samples], batch_size=batch_size, lr=1e-3)
    return samples / (time.perf_counter() - t0)


def round_robin_medians(configs: dict[Hashable, Callable[[], float]], repeats: int,
                        log: Callable[[str], None] = print) -> dict[Hashable, dict]:
    """{config: {"median": m, "runs": [...]}} after `repeats` rounds over all configs."""
    runs: dict[Hashable, list[float]] = {key: [] for key in configs}
    for r in range(repeats):
        for key, measure in configs.items():
            runs[key].append(measure())
            log(f"  round {r + 1}/{repeats}  {key}: {runs[key][-1]:,.0f} samples/s")
    return {key: {"median": statistics.median(v), "runs": v} for key, v in runs.items()}
