"""A short replay of the structure-aware file fuzzer (benches/fuzz_files): hostile model files, run
folders, shard folders and skip-gram models, every checksum recomputed, must each be used or
refused with a documented error; never a crash or a traceback. The bench runs 10^5 cases; these
are its first cases, so a regression in any reader fails here too (and under the sanitizers,
which run the default suite)."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKER = f"import sys; sys.path.append({str(ROOT)!r}); from benches.fuzz_files.worker import main; main()"
CASES = 400


def test_fuzzed_files_are_used_or_refused_never_crash_or_traceback(tmp_path):
    run = subprocess.run([sys.executable, "-c", WORKER, "0", "0", str(CASES), str(tmp_path)], capture_output=True,
                         text=True, timeout=600, cwd=tmp_path)
    records = [json.loads(line) for line in run.stdout.splitlines() if '"outcome"' in line]
    assert run.returncode == 0, f"the worker died in case {len(records)}: {run.stderr[-3000:]}"
    assert len(records) == CASES
    tracebacks = [r for r in records if r["outcome"] == "traceback"]
    assert not tracebacks, "\n\n".join(f"case {r['case']} ({r['kind']}: {r.get('what')}):\n{r['error']}"
                                       for r in tracebacks[:3])
    outcomes = Counter((r["kind"], r["outcome"]) for r in records)
    for kind in ("model", "run", "shards", "skipgram"):  # every kind both loads and is refused
        assert outcomes[(kind, "ok")] and outcomes[(kind, "refused")], outcomes
