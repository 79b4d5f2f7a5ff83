"""Runs numbered cases in worker processes and tells a crash (the worker died) and a hang (no line
within the timeout) from an outcome, restarting the worker after the case that killed it. A worker
(serve_cases) prints a JSON line {"start": i} before case i and the case's record (with "case" and
"outcome") after it. Used by benches.stress and benches.fuzz_files."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional


def run_cases(command: Callable[[int, int], list[str]], cases: int, timeout: float, *, env: dict,
              cwd: Path, stderr_log: Path, first: int = 0,
              on_record: Optional[Callable[[dict], None]] = None) -> tuple[list[dict], list[dict]]:
    """All case records of cases [first, first + cases), and the findings (crashes, hangs,
    tracebacks). `command(start, count)` is the worker's argv for cases [start, start + count)."""
    records: list[dict] = []
    findings: list[dict] = []
    index, end = first, first + cases
    while index < end:
        with open(stderr_log, "w") as err:
            proc = subprocess.Popen(command(index, end - index), stdout=subprocess.PIPE, stderr=err, text=True,
                                    cwd=cwd, env=env)
            finding, index = _follow(proc, timeout, index, end, records, on_record)
        if finding is not None:
            if finding["outcome"] == "crash":
                finding["stderr"] = stderr_log.read_text(errors="replace")[-2000:]
            findings.append(finding)
            records.append(finding)
    findings.extend(r for r in records if r.get("outcome") == "traceback")
    return records, findings


def _follow(proc: subprocess.Popen, timeout: float, index: int, end: int, records: list[dict],
            on_record: Optional[Callable[[dict], None]]) -> tuple[Optional[dict], int]:
    """Read one worker until it ends or hangs: (a crash or hang record or None, the next case)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    current, last = None, time.monotonic()
    while True:
        if not sel.select(timeout=5):
            if time.monotonic() - last > timeout:
                proc.kill()
                proc.wait()
                return {"case": current, "outcome": "hang", "seconds": timeout}, (current if current is not None
                                                                                  else index) + 1
            continue
        line = proc.stdout.readline()
        if not line:  # the worker ended: finished, or died inside case `current`
            code = proc.wait()
            if code == 0:
                return None, end
            return ({"case": current, "outcome": "crash", "signal_or_code": -code if code < 0 else code},
                    (current if current is not None else index) + 1)
        last = time.monotonic()
        msg = json.loads(line)
        if "start" in msg:
            current = msg["start"]
            continue
        records.append(msg)
        if on_record is not None:
            on_record(msg)
        index = msg["case"] + 1


def serve_cases(prepare: Callable[[Path, int], Any], run_case: Callable[[int, int, Path, Any], dict]) -> None:
    """The worker's side: argv is (seed, start, count, scratch folder); `prepare(tmp, seed)` makes
    what every case shares, then each case's record is printed between its start line and the next."""
    import numpy as np

    seed, start, count, tmp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    shared = prepare(tmp, seed)
    np.seterr(all="ignore")
    for index in range(start, start + count):
        print(json.dumps({"start": index}), flush=True)
        print(json.dumps(run_case(index, seed, tmp, shared)), flush=True)
