"""The run folder's picture: test P@1 and training loss against wall-clock time."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

log = logging.getLogger("slide")
_warned = False


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM during the block is acted on when the block ends, by the handler that was
    in place: an interrupt that lands inside an import comes out of it as a RuntimeError (and a
    half-imported module), which would crash a run instead of checkpointing it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in saved:
        signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if pending:
            _deliver(saved[pending[0]], pending[0])


def _deliver(handler: Any, signum: int) -> None:
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL and signum == signal.SIGTERM:
        signal.raise_signal(signum)
    elif handler != signal.SIG_IGN:
        raise KeyboardInterrupt


def _pyplot() -> Optional[Any]:
    """matplotlib.pyplot on the Agg backend, imported with interrupts deferred; None when
    matplotlib is not installed."""
    with interrupts_deferred():
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return None
    return plt


def plot_progress(records: Sequence[dict], path: Path, title: str = "") -> bool:
    """Write a PNG from metrics.jsonl records; returns False (and logs why) when it cannot."""
    points = [r for r in records if "P@1" in r and "wall_seconds" in r]  # MPI runs' records have no time
    if not points:
        return False
    plt = _pyplot()
    if plt is None:
        global _warned
        if not _warned:
            log.warning("matplotlib is not installed; no %s (pip install matplotlib)", path.name)
            _warned = True
        return False
    from .atomic_files import atomic_write

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    t = [r["wall_seconds"] for r in points]
    ax.plot(t, [r["P@1"] for r in points], "o-", color="tab:blue", label="test P@1")
    validated = [(r["wall_seconds"], r["val_P@1"]) for r in points if "val_P@1" in r]
    if validated:
        ax.plot(*zip(*validated), "^:", color="tab:green", label="validation P@1")
        ax.legend(loc="lower right")
    ax.set_xlabel("wall-clock training time (s)")
    ax.set_ylabel("test P@1", color="tab:blue")
    ax.set_ylim(bottom=0)
    losses = [(r["wall_seconds"], r["train_loss"]) for r in points if r.get("train_loss") is not None]
    if losses:
        ax2 = ax.twinx()
        ax2.plot(*zip(*losses), "s--", color="tab:red", label="training loss")
        ax2.set_ylabel("training loss (active set)", color="tab:red")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png"))
    plt.close(fig)
    return True
