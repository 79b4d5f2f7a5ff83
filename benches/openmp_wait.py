"""How OpenMP's wait at the end of a parallel region costs training time (slide.openmp_wait), on
real-suite sets of three sizes, on a quiet machine and beside busy processes (one per thread,
each spinning in a loop, as another job on a shared server would).

    python -m benches.real_suite --build-only          # the suite's data, outside the repository
    python -m benches.openmp_wait [--data-dir DIR] [--threads 2] [--repeats 3]

Each measurement is a fresh process (libgomp reads its settings when it loads) that trains the
shape's default network (slide.shape_defaults, without vote or re-ranker) for the set's epochs and
reports the training seconds; loading the data is not timed. The policies run round-robin
`--repeats` times on the quiet machine and once under load; each reports its median.
Writes benches/results/openmp_wait.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slide.openmp_wait import SPIN_COUNT, USER_SETTINGS

from .environment import describe
from .real_suite.files import DEFAULT_DATA_DIR, built_sets

RESULTS = Path(__file__).resolve().parent / "results"
# (set, epochs): a tiny dense-output run, a mid-sized one and a sampled 40,415-label one.
CASES = (("enron", 10), ("debian-tags", 2), ("debian-deps", 1))
# The environment each policy runs with; slide's own is what a user who sets nothing gets.
SLIDE_POLICY = f"slide (spin {SPIN_COUNT:,})"
POLICIES = {
    "libgomp default (spin 300,000)": {"GOMP_SPINCOUNT": "300000"},
    SLIDE_POLICY: {},
    "spin 1,000": {"GOMP_SPINCOUNT": "1000"},
    "passive": {"OMP_WAIT_POLICY": "passive"},
}
TIMEOUT = 600.0


def train_once(folder: Path, epochs: int, threads: int) -> float:
    """Seconds to train the shape's default network on folder's training split."""
    from slide.datasets.xc_files import load_xc

    from .default_network import default_network

    train = load_xc(folder / "train.txt")
    net, cfg, _ = default_network(train.X.shape[1], train.Y.shape[1], threads, 0, train.X.shape[0], neighbours=0,
                                  rerank=0)
    t0 = time.perf_counter()
    net.fit(train.X, train.Y, epochs=epochs, batch_size=cfg["batch_size"], progress=False)
    return time.perf_counter() - t0


def measure(folder: Path, epochs: int, threads: int, policy: dict) -> float:
    env = {k: v for k, v in os.environ.items() if k not in USER_SETTINGS}
    r = subprocess.run([sys.executable, "-m", "benches.openmp_wait", "--case", str(folder), str(epochs),
                        "--threads", str(threads)], env={**env, **policy}, capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=Path(__file__).resolve().parent.parent)
    if r.returncode != 0:
        raise SystemExit(f"{folder.name} with {policy}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return float(r.stdout.strip().splitlines()[-1])


def timings(seconds: list[float], slides: float, digits: int) -> dict:
    """A setting's runs, their median, and that against slide's own setting's median `slides`."""
    median = statistics.median(seconds)
    return {"train_seconds": round(median, digits), "runs": [round(s, digits) for s in seconds],
            "vs_slide": round(median / slides, 3)}


@contextmanager
def under_load(load: str, threads: int) -> Iterator[None]:
    """The block on a quiet machine ("quiet"), or beside one process spinning in a loop per thread
    ("busy"), as another job on a shared server would be."""
    others = ([subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(threads)]
              if load == "busy" else [])
    try:
        yield
    finally:
        for p in others:
            p.kill()
            p.wait()


def run_load(load: str, folders: dict, threads: int, repeats: int) -> list[dict]:
    runs: dict = {(s, p): [] for s in folders for p in POLICIES}
    with under_load(load, threads):
        for _ in range(repeats):
            for (name, epochs), folder in folders.items():
                for policy, env in POLICIES.items():
                    runs[((name, epochs), policy)].append(measure(folder, epochs, threads, env))
                    print(f"{load:5s} {name:12s} {policy:32s} {runs[((name, epochs), policy)][-1]:7.2f}s", flush=True)
    rows = []
    for ((name, epochs), policy), seconds in runs.items():
        base = statistics.median(runs[((name, epochs), SLIDE_POLICY)])
        rows.append({"load": load, "set": name, "epochs": epochs, "policy": policy, "env": POLICIES[policy],
                     **timings(seconds, base, 3)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--case", nargs=2, metavar=("FOLDER", "EPOCHS"), help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=RESULTS / "openmp_wait.json")
    args = ap.parse_args()
    if args.case:
        print(train_once(Path(args.case[0]), int(args.case[1]), args.threads))
        return 0
    folders = dict(zip(CASES, built_sets(args.data_dir, [name for name, _ in CASES])))
    environment = describe(args.threads)  # before the runs: the commit they measure
    rows = run_load("quiet", folders, args.threads, args.repeats) + run_load("busy", folders, args.threads, 1)
    report = {"benchmark": "openmp_wait", "environment": environment,
              "protocol": __doc__.split("\n\n")[0], "busy_processes": args.threads, "repeats": args.repeats,
              "rows": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
