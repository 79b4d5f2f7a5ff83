"""Running one comparison system in its own process (so its peak RSS is its own) on data written
once to a temporary directory; shared by benches.compare and benches.time_to_accuracy."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def generated_data(n_train: int, n_test: int, generator: str = "clean", **generator_kwargs) -> Iterator[Path]:
    """Amazon-670K-shaped data, written as .npz for the child processes: `synthetic_amazon670k`
    (``generator="clean"``; `generator_kwargs` such as ``cluster_size`` go to it) or
    `catalogue_amazon670k` (``"catalogue"``)."""
    import scipy.sparse as sp

    from slide.datasets import catalogue_amazon670k, synthetic_amazon670k

    make = {"clean": synthetic_amazon670k, "catalogue": catalogue_amazon670k}[generator]
    with tempfile.TemporaryDirectory() as tmp:
        train, test = make(n_train=n_train, n_test=n_test, seed=0, **generator_kwargs)
        for name, m in (("Xtr", train.X), ("Ytr", train.Y), ("Xte", test.X), ("Yte", test.Y)):
            sp.save_npz(Path(tmp) / f"{name}.npz", m, compressed=False)
        del train, test
        yield Path(tmp)


def run_system(name: str, data_dir: Path, *, threads: int, batch_size: int, lr: float, budget: float,
               max_epochs: int, checkpoints: int, checkpoint_test: int) -> dict | None:
    """benches.protocol.run for one system in a child process; None (after its own error output)
    when the child fails."""
    args = ["--child", name, "--data", str(data_dir), "--threads", str(threads), "--batch-size", str(batch_size),
            "--lr", str(lr), "--budget", str(budget), "--max-epochs", str(max_epochs), "--checkpoints",
            str(checkpoints), "--checkpoint-test", str(checkpoint_test)]
    r = subprocess.run([sys.executable, "-m", "benches.compare", *args], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if r.returncode != 0:
        print(f"  {name} failed (exit {r.returncode}); see its output above", flush=True)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])
