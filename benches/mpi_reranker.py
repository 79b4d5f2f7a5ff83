"""What the shortlist re-ranker gives an MPI run (slide.prediction.reranker_training), on one set
of the real-data suite: `mpirun -n 2 slide train --train F --test F --threads 1` with its
defaults (the re-ranker trained over both ranks), the same with --rerank 0 (the network alone,
what MPI runs predicted with before), and one process with 2 threads for reference (the vote
and the re-ranker), side by side in one session.

    python -m benches.real_suite --build-only          # the suite's data, outside the repository
    python -m benches.mpi_reranker [--data-dir DIR] [--set debian-deps]

Needs Open MPI's mpirun and mpi4py. Reads the test set's P@k from each run's final record in
metrics.jsonl with the seconds it spent after the last epoch (`fusion_seconds`: the vote's memory,
the re-ranker and their weights), and times each whole command: loading, training, the re-ranker
and the final evaluation, for every run alike.
Writes benches/results/mpi_reranker.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .environment import describe
from .real_suite.files import DEFAULT_DATA_DIR, built_sets

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = (("mpirun -n 2, 1 thread each, defaults", 2, ()),
        ("mpirun -n 2, 1 thread each, --rerank 0", 2, ("--rerank", "0")),
        ("one process, 2 threads, defaults", 1, ()))


def run(folder: Path, ranks: int, extra: tuple, work: Path, seed: int) -> dict:
    from slide.cli.train_mpi import environment_outside_mpi_job
    from slide.runs import read_metrics

    out = work / "run"
    train = [sys.executable, "-m", "slide", "train", "--train", str(folder / "train.txt"), "--test",
             str(folder / "test.txt"), "--seed", str(seed), "--out", str(out), "--quiet", *extra]
    if ranks > 1:
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            raise SystemExit("needs Open MPI's mpirun (apt-get install openmpi-bin) and mpi4py")
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        cmd = [mpirun, "--oversubscribe", *root, "-n", str(ranks), *train, "--threads", "1"]
    else:
        cmd = [*train, "--threads", "2"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=environment_outside_mpi_job())
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    final = [m for m in read_metrics(out) if m["kind"] == "final"][-1]
    return {**{k: round(final[k], 4) for k in ("P@1", "P@3", "P@5")}, "wall_seconds": round(wall, 1),
            "fusion_seconds": round(final.get("fusion_seconds", 0.0), 2),
            "stdout_tail": r.stdout.strip().splitlines()[-3:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--set", default="debian-deps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "mpi_reranker.json")
    args = ap.parse_args()
    folder, = built_sets(args.data_dir, [args.set])
    environment = describe(2)  # before the runs: the commit they measure
    rows = []
    for name, ranks, extra in RUNS:
        with tempfile.TemporaryDirectory() as work:
            rows.append({"run": name, "ranks": ranks, "flags": list(extra), **run(folder, ranks, extra, Path(work),
                                                                                   args.seed)})
        print(f"{name:42s} P@1 {rows[-1]['P@1']:.4f} P@5 {rows[-1]['P@5']:.4f} "
              f"wall {rows[-1]['wall_seconds']:.1f} s", flush=True)
    report = {"benchmark": "mpi_reranker", "environment": environment, "protocol": __doc__.split("\n\n")[0],
              "set": args.set, "rows": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
