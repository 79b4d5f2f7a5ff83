"""Stress run: random API calls and command lines (benches/stress/cases.py) against slide, counting
crashes (a worker killed by a signal), hangs (no progress within --timeout seconds) and tracebacks
(an exception other than a documented user error escaping).

    python -m benches.stress [--cases 10000] [--seed 0] [--timeout 120]

Writes benches/results/stress.json; exits 1 if any crash, hang or traceback was found.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..case_runner import run_cases
from ..environment import describe

RESULTS = Path(__file__).resolve().parents[1] / "results"


def run(cases: int, seed: int, timeout: float, tmp: Path) -> tuple[list[dict], list[dict]]:
    """All case records, and the findings (crashes, hangs, tracebacks)."""
    records: list[dict] = []

    def progress(record: dict) -> None:
        records.append(record)
        if len(records) % 500 == 0:
            print(f"{len(records):,} cases", flush=True)

    command = lambda start, count: [sys.executable, "-m", "benches.stress.worker", str(seed), str(start),  # noqa: E731
                                    str(count), str(tmp)]
    return run_cases(command, cases, timeout, env={**os.environ, "OMP_WAIT_POLICY": "passive"},
                     cwd=Path(__file__).resolve().parents[2], stderr_log=tmp / "worker.stderr", on_record=progress)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds without progress that count as a hang")
    p.add_argument("--out", type=Path, default=RESULTS / "stress.json")
    args = p.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="slide-stress-") as tmp:
        records, findings = run(args.cases, args.seed, args.timeout, Path(tmp))
    counts = Counter((r.get("kind", "?"), r["outcome"]) for r in records)
    by_outcome = Counter(r["outcome"] for r in records)
    result = {
        "benchmark": "stress",
        "command": f"python -m benches.stress --cases {args.cases} --seed {args.seed} --timeout {args.timeout:g}",
        "environment": describe(threads=2),
        "seconds": round(time.time() - t0, 1),
        "cases": len(records),
        "outcomes": dict(by_outcome),
        "by_kind": {f"{k}/{o}": n for (k, o), n in sorted(counts.items())},
        "crashes": by_outcome.get("crash", 0),
        "hangs": by_outcome.get("hang", 0),
        "tracebacks": by_outcome.get("traceback", 0),
        "findings": findings[:50],
        "sample_refusals": [r.get("error") for r in records if r["outcome"] == "refused"][:40:2],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(records):,} cases in {result['seconds']:,.0f}s: {dict(by_outcome)}; wrote {args.out}")
    return 1 if findings else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
