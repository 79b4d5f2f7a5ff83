"""How many threads a tiny training step should share (slide.parallel_work_floor): every step split
over the threads (floor 0, what slide did before) against slide's floor, on the real suite's
dense-output sets, on a quiet machine and beside busy processes (one per thread, each spinning in a
loop, as another job on a shared server would).

    python -m benches.real_suite --build-only          # the suite's data, outside the repository
    python -m benches.step_team [--data-dir DIR] [--threads 2] [--repeats 5] [--busy-repeats 5] [--sets medical ...]

Each measurement is a fresh process that trains the shape's default network (slide.shape_defaults,
without vote or re-ranker) for its default epochs and batch (Medical also at a batch of 4), and
reports the training seconds; loading the data is not timed. The floors run round-robin,
`--repeats` times on the quiet machine and `--busy-repeats` times under load; each reports its
median (under load one run says little: one setting took 0.05 s and 2 s on Medical in one session). Writes benches/results/step_team.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
from slide import _core
from slide.parallel_work_floor import VARIABLE

from .environment import describe
from .openmp_wait import TIMEOUT, timings, under_load
from .real_suite.files import DEFAULT_DATA_DIR, built_sets

RESULTS = Path(__file__).resolve().parent / "results"
# (set, batch size; None: the shape's): every dense-output set of the suite, smallest step first
# (multiply-adds of a batch's forward pass), and Medical at a batch of 4, a step below the floor.
CASES = (("medical", 4), ("medical", None), ("enron", None), ("tmc2007-500", None), ("bibtex", None),
         ("corel5k", None), ("delicious", None))
SLIDE_FLOOR = f"slide (floor {_core.DEFAULT_PARALLEL_WORK_FLOOR:,})"
FLOORS = {"every step split (floor 0)": "0", SLIDE_FLOOR: str(_core.DEFAULT_PARALLEL_WORK_FLOOR)}


def train_once(folder: Path, threads: int, batch: Optional[int]) -> tuple[float, int]:
    """(seconds to train the shape's default network on folder's training split, at `batch` if
    given, the forward multiply-adds the engine counts for a batch of its first points)."""
    from slide.datasets.xc_files import load_xc

    from .default_network import default_network

    train = load_xc(folder / "train.txt")
    net, cfg, _ = default_network(train.X.shape[1], train.Y.shape[1], threads, 0, train.X.shape[0], neighbours=0,
                                  rerank=0)
    batch = batch or cfg["batch_size"]
    X = train.X
    work, _ = _core.testing.step_team(net._core, X.indptr.astype(np.int64), X.indices.astype(np.int32),
                                      X.data.astype(np.float32), np.arange(batch, dtype=np.int64))
    t0 = time.perf_counter()
    net.fit(train.X, train.Y, epochs=cfg["epochs"], batch_size=batch, progress=False)
    return time.perf_counter() - t0, work


def measure(folder: Path, batch: Optional[int], threads: int, floor: str) -> tuple[float, int]:
    env = {**os.environ, VARIABLE: floor}
    r = subprocess.run([sys.executable, "-m", "benches.step_team", "--case", str(folder), str(batch or 0),
                        "--threads", str(threads)],
                       env=env, capture_output=True, text=True, timeout=TIMEOUT,
                       cwd=Path(__file__).resolve().parent.parent)
    if r.returncode != 0:
        raise SystemExit(f"{folder.name} with floor {floor}: exit {r.returncode}\n{r.stderr[-2000:]}")
    seconds, work = r.stdout.strip().splitlines()[-1].split()
    return float(seconds), int(work)


def run_load(load: str, folders: dict, threads: int, repeats: int) -> list[dict]:
    runs: dict = {(s, f): [] for s in folders for f in FLOORS}
    work: dict = {}
    with under_load(load, threads):
        for _ in range(repeats):
            for name, (folder, batch) in folders.items():
                for label, floor in FLOORS.items():
                    seconds, work[name] = measure(folder, batch, threads, floor)
                    runs[(name, label)].append(seconds)
                    print(f"{load:5s} {name:20s} {label:28s} {seconds:7.3f}s", flush=True)
    rows = []
    for (name, label), seconds in runs.items():
        base = statistics.median(runs[(name, SLIDE_FLOOR)])
        rows.append({"load": load, "set": name, "step_work": work[name], "floor": label, "env": {VARIABLE: FLOORS[label]},
                     **timings(seconds, base, 4)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--busy-repeats", type=int, default=5)
    ap.add_argument("--sets", nargs="+", default=sorted({s for s, _ in CASES}), choices=sorted({s for s, _ in CASES}))
    ap.add_argument("--case", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=RESULTS / "step_team.json")
    args = ap.parse_args()
    if args.case:
        print(*train_once(Path(args.case[0]), args.threads, int(args.case[1]) or None))
        return 0
    cases = [(s, b) for s, b in CASES if s in args.sets]
    folders = {f"{s}, batch {b}" if b else s: (folder, b)
               for (s, b), folder in zip(cases, built_sets(args.data_dir, [s for s, _ in cases]))}
    environment = describe(args.threads)  # before the runs: the commit they measure
    rows = run_load("quiet", folders, args.threads, args.repeats) + run_load("busy", folders, args.threads, args.busy_repeats)
    report = {"benchmark": "step_team", "environment": environment, "protocol": __doc__.split("\n\n")[0],
              "busy_processes": args.threads, "repeats": args.repeats, "busy_repeats": args.busy_repeats,
              "default_floor": _core.DEFAULT_PARALLEL_WORK_FLOOR, "rows": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
