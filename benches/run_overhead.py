"""What a `slide train` run spends outside training at Amazon-670K scale: data, evaluation,
checkpoints, the final evaluation and model file, against the run's wall time.

    python -m benches.run_overhead [--epochs 10] [--train-samples N] [--test-samples 10000] [--threads 2]

Runs the CLI as a user would (`slide train --dataset catalogue-amazon670k ...`, defaults
otherwise: all 490,449 training points of Amazon-670K's shape unless --train-samples says fewer)
in a subprocess, reads the final metrics record and writes benches/results/run_overhead.json.
The generated data is read from the data dir when an earlier run drew it (the data line says
which); run once before to measure a returning user's run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slide.runs import CHECKPOINT, MODEL, read_metrics

from .environment import describe
from .result_file import write_result

RESULT = Path(__file__).resolve().parent / "results" / "run_overhead.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--train-samples", type=int, default=None, help="default: the dataset's 490,449")
    p.add_argument("--test-samples", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = [sys.executable, "-m", "slide", "train", "--dataset", "catalogue-amazon670k", "--quiet",
                   *(["--train-samples", str(a.train_samples)] if a.train_samples else []),
                   "--test-samples", str(a.test_samples),
                   "--epochs", str(a.epochs), "--threads", str(a.threads), "--out", str(run_dir)]
        t0 = time.perf_counter()
        r = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"slide train failed ({r.returncode}):\n{r.stderr}")
        records = read_metrics(run_dir)
        sizes = {name: (run_dir / name).stat().st_size for name in (CHECKPOINT, MODEL)}
    final = records[-1]
    train = final["train_seconds"]
    data_line = next(line for line in r.stdout.splitlines() if line.startswith("data:"))
    result = {
        "command": " ".join(command[1:]),
        "wall_seconds": round(wall, 1),
        "train_seconds": train,
        "eval_seconds": final["eval_seconds"],
        "evaluations_during_training": final["evaluations"],
        "checkpoint_seconds": final["checkpoint_seconds"],
        "checkpoints": final["checkpoints"],
        "outside_training_share": round(1 - train / wall, 3),
        "data_line": data_line,
        "time_line": r.stdout.strip().splitlines()[-1],
        "file_bytes": sizes,
        "final": {k: final[k] for k in ("P@1", "P@3", "P@5")},
        "environment": describe(a.threads),
    }
    write_result(a.out, result)


if __name__ == "__main__":
    main()
