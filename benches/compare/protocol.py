"""What every system in the comparison does, identically: train on the shared data in pieces,
stop the training clock to evaluate P@1/3/5 and PSP@1/3/5 at wall-clock checkpoints, and report
throughput, epoch time and peak RSS. A system supplies `train(rows)` and `top_k(X, k)`; a system
that can only train on everything at once (a tree method) supplies `fit(X, Y)` instead, and its
timeline is the one point where that training ends. A system may hold training points out
(`held_out`, row indices) to validate on; they never train, and epochs count the rest."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Callable, Protocol

import numpy as np
import scipy.sparse as sp


class System(Protocol):
    def train(self, rows: np.ndarray) -> None: ...
    def top_k(self, X: sp.csr_matrix, k: int) -> np.ndarray: ...


# The XC repository's propensity model parameters for Amazon datasets (Jain et al. 2016).
PROPENSITY_A, PROPENSITY_B = 0.6, 2.6


def add_run_arguments(ap, *, checkpoints: int, checkpoint_test: int = 2_000) -> None:
    """The arguments of `run` and of the generated data every comparison shares."""
    ap.add_argument("--train", type=int, default=100_000, help="generated training points")
    ap.add_argument("--test", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--budget", type=float, default=120.0, help="training seconds per system")
    ap.add_argument("--max-epochs", type=int, default=10)
    ap.add_argument("--checkpoints", type=int, default=checkpoints)
    ap.add_argument("--checkpoint-test", type=int, default=checkpoint_test)


def load(data_dir: Path) -> dict[str, sp.csr_matrix]:
    return {n: sp.load_npz(data_dir / f"{n}.npz").tocsr() for n in ("Xtr", "Ytr", "Xte", "Yte")}


def scores(top: np.ndarray, Y: sp.csr_matrix, inv_propensity: np.ndarray, ks=(1, 3, 5)) -> dict[str, float]:
    from slide.metrics import precision_at_k, psp_at_k

    return {**{f"P@{k}": precision_at_k(top, Y, k) for k in ks},
            **{f"PSP@{k}": psp_at_k(top, Y, inv_propensity, k) for k in ks}}


def run_once(system, data: dict, inv_propensity: np.ndarray, log: Callable[[str], None]) -> dict:
    """A system that trains on the whole training set in one call: one timed `fit`, one checkpoint."""
    t0 = time.perf_counter()
    system.fit(data["Xtr"], data["Ytr"])
    train_s = time.perf_counter() - t0
    n = data["Xtr"].shape[0]
    t1 = time.perf_counter()
    final = scores(system.top_k(data["Xte"], 5), data["Yte"], inv_propensity)
    log(f"  {train_s:7.1f}s  {n:>9,} samples  P@1 {final['P@1']:.4f}")
    return {
        "train_seconds": train_s, "samples": n, "epochs": 1.0, "samples_per_second": n / train_s,
        "seconds_per_epoch": train_s,
        "timeline": [{"train_seconds": round(train_s, 2), "samples": n, "epoch": 1, **final}],
        "final": {"test_points": data["Xte"].shape[0], "eval_seconds": round(time.perf_counter() - t1, 1), **final},
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def run(system: System, data: dict, *, batch_size: int, budget_seconds: float, max_epochs: int,
        checkpoints: int, checkpoint_test_points: int, seed: int = 0, log: Callable[[str], None] = print,
        pause: Callable[[], None] = lambda: None) -> dict:
    """Train until `budget_seconds` of training time or `max_epochs`, evaluating at `checkpoints`
    evenly spaced training times on the first `checkpoint_test_points` test points, and once at
    the end on the whole test set. Training runs in pieces sized to take about a twentieth of a
    checkpoint interval, so slow and fast systems alike stop close to their checkpoints; `pause`
    is called before each piece, off the training clock (benches.compare.turns)."""
    from slide.metrics import inverse_propensities

    inv_propensity = inverse_propensities(data["Ytr"], a=PROPENSITY_A, b=PROPENSITY_B)
    if hasattr(system, "fit"):
        return run_once(system, data, inv_propensity, log)
    # a system that holds some training points out (to validate on) never trains on them
    train_rows = np.setdiff1d(np.arange(data["Xtr"].shape[0]), getattr(system, "held_out", []))
    n = len(train_rows)
    Xc, Yc = data["Xte"][:checkpoint_test_points], data["Yte"][:checkpoint_test_points]
    every = budget_seconds / checkpoints
    next_eval, train_s, samples, timeline, epoch_seconds = every, 0.0, 0, [], []
    rng = np.random.default_rng(seed)
    piece = batch_size
    done = False
    for epoch in range(max_epochs):
        order = rng.permutation(train_rows)
        epoch_t = 0.0
        start = 0
        while start < n:
            rows = order[start:start + piece]
            start += len(rows)
            pause()
            t0 = time.perf_counter()
            system.train(rows)
            dt = time.perf_counter() - t0
            train_s, epoch_t, samples = train_s + dt, epoch_t + dt, samples + len(rows)
            per_batch = dt / max(1, -(-len(rows) // batch_size))
            piece = batch_size * max(1, min(200, int(every / 20 / max(per_batch, 1e-6))))
            if train_s >= next_eval or train_s >= budget_seconds:
                t1 = time.perf_counter()
                p = scores(system.top_k(Xc, 5), Yc, inv_propensity)
                timeline.append({"train_seconds": round(train_s, 2), "samples": samples, "epoch": epoch + 1,
                                 "eval_seconds": round(time.perf_counter() - t1, 2), **p})
                log(f"  {train_s:7.1f}s  {samples:>9,} samples  P@1 {p['P@1']:.4f}")
                next_eval += every
            if train_s >= budget_seconds:
                done = True
                break
        if not done:
            epoch_seconds.append(epoch_t)
        if done:
            break
    t1 = time.perf_counter()
    final = scores(system.top_k(data["Xte"], 5), data["Yte"], inv_propensity)
    return {
        "train_seconds": train_s,
        "samples": samples,
        "epochs": samples / n,
        "samples_per_second": samples / train_s,
        "seconds_per_epoch": (float(np.mean(epoch_seconds)) if epoch_seconds else train_s * n / samples),
        "timeline": timeline,
        "final": {"test_points": data["Xte"].shape[0], "eval_seconds": round(time.perf_counter() - t1, 1), **final},
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
