"""Structure-aware fuzzing of the files slide reads back: model files (three kinds of network),
run folders (checkpoint, config.json, metrics.jsonl, model), shard folders and skip-gram models.

    python -m benches.fuzz_files [--cases 100000] [--workers 2] [--sanitized] [--max-rss-mb 1024]

Each case takes a well-formed seed apart (arrays, JSON header, manifest), changes one to three
things in it (edge values, lengths, shapes, types, missing or extra members, hostile JSON, lying
.npy headers, deflated members), writes it back with every checksum recomputed and uses it as slide
does (benches/fuzz_files/targets.py). A case must end "ok" or "refused" (a documented error); a crash
(the worker died), a hang (no case finished within --timeout), a traceback (an undocumented
exception), a sanitizer report (--sanitized: the extension built with ASan+UBSan by
benches.sanitizers) or a worker above --max-rss-mb resident memory is a finding. Writes
benches/results/fuzz_files.json (or --out) and exits 1 on any finding.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from ..case_runner import run_cases
from ..environment import describe

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benches" / "results"
WORKER = f"import sys; sys.path.append({str(ROOT)!r}); from benches.fuzz_files.worker import main; main()"


def _environment(sanitized: bool, logs: Path) -> dict:
    env = {**os.environ, "OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "1"}
    if not sanitized:
        return env
    from ..sanitizers import build, sanitizer_env

    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    return {**sanitizer_env(build(), logs), "OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "1"}


def fuzz(cases: int, seed: int, workers: int, timeout: float, env: dict, tmp: Path) -> tuple[list, list]:
    """Cases split into `workers` contiguous ranges, each run by its own worker process."""
    records: list[dict] = []
    findings: list[dict] = []
    lock = threading.Lock()

    def progress(record: dict) -> None:
        with lock:
            records.append(record)
            if len(records) % 2000 == 0:
                print(f"{len(records):,} cases, {sum(r['outcome'] == 'refused' for r in records):,} refused",
                      flush=True)

    def one(w: int, first: int, count: int) -> None:
        folder = tmp / f"worker{w}"
        folder.mkdir()
        command = lambda start, n: [sys.executable, "-c", WORKER, str(seed), str(start), str(n),  # noqa: E731
                                    str(folder)]
        got, found = run_cases(command, count, timeout, env=env, cwd=folder, stderr_log=tmp / f"worker{w}.err",
                               first=first, on_record=progress)
        with lock:
            records.extend(r for r in got if r["outcome"] in ("crash", "hang"))
            findings.extend(found)

    share = -(-cases // workers)
    threads = [threading.Thread(target=one, args=(w, w * share, min(share, cases - w * share)))
               for w in range(workers) if w * share < cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return records, findings


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds without a finished case that count as a hang")
    p.add_argument("--sanitized", action="store_true", help="run against the ASan+UBSan build (benches.sanitizers)")
    # Under ASan a worker's resident memory also holds the allocator's quarantine (256 MiB of freed
    # blocks by default) and shadow memory, and the worker itself builds 64 MiB compression bombs.
    p.add_argument("--max-rss-mb", type=float, default=None,
                   help="a worker above this resident memory is a finding (default 1024, 1536 with --sanitized)")
    p.add_argument("--out", type=Path, default=RESULTS / "fuzz_files.json")
    args = p.parse_args()
    if args.max_rss_mb is None:
        args.max_rss_mb = 1536.0 if args.sanitized else 1024.0
    t0 = time.time()
    logs = ROOT / "build" / "sanitize" / "fuzz-logs"
    env = _environment(args.sanitized, logs)
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="slide-fuzz-files-", dir=scratch) as tmp:
        records, findings = fuzz(args.cases, args.seed, args.workers, args.timeout, env, Path(tmp))
    reports = sorted(logs.iterdir()) if args.sanitized else []
    peak = max((r.get("peak_rss_mb", 0.0) for r in records), default=0.0)
    if peak > args.max_rss_mb:
        findings.append({"outcome": "memory", "peak_rss_mb": peak, "bound_mb": args.max_rss_mb})
    by_outcome = Counter(r["outcome"] for r in records)
    result = {
        "benchmark": "fuzz_files",
        "command": f"python -m benches.fuzz_files --cases {args.cases} --seed {args.seed} --workers {args.workers}"
                   + (" --sanitized" if args.sanitized else "") + f" --max-rss-mb {args.max_rss_mb:g}",
        "environment": describe(threads=1),
        "sanitizers": ["address", "undefined"] if args.sanitized else [],
        "seconds": round(time.time() - t0, 1),
        "cases": len(records),
        "outcomes": dict(by_outcome),
        "by_kind": {f"{k}/{o}": n for (k, o), n in sorted(Counter((r.get("kind", "?"), r["outcome"])
                                                                   for r in records).items())},
        "mean_case_seconds": {k: round(sum(r["seconds"] for r in records if r.get("kind") == k)
                                       / max(1, sum(1 for r in records if r.get("kind") == k and "seconds" in r)), 4)
                              for k in sorted({r.get("kind", "?") for r in records if "seconds" in r})},
        "crashes": by_outcome.get("crash", 0),
        "hangs": by_outcome.get("hang", 0),
        "tracebacks": by_outcome.get("traceback", 0),
        "sanitizer_reports": [{"file": r.name, "head": r.read_text(errors="replace")[:2000]} for r in reports],
        "peak_rss_mb": peak,
        "max_rss_mb": args.max_rss_mb,
        "findings": findings[:50],
        "sample_refusals": sorted({r.get("error", "")[:160] for r in records if r["outcome"] == "refused"})[:60],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(records):,} cases in {result['seconds']:,.0f} s: {dict(by_outcome)}; "
          f"{len(reports)} sanitizer reports; peak RSS {peak:,.0f} MB; wrote {args.out}")
    for f in findings[:10]:
        print(json.dumps(f)[:1500])
    return 1 if findings or reports else 0


if __name__ == "__main__":
    sys.exit(main())
