"""Coverage-guided fuzzing of the C++ parsers with libFuzzer (+ AddressSanitizer, UBSan).

    python -m benches.fuzz_parsers [--seconds 300] [--hypothesis-examples 20000]

Needs clang and its fuzzer runtime (Debian: `apt install clang libclang-rt-14-dev`). Builds one
binary per target from cpp/fuzz/, runs each for a bounded time on its corpus in
tests/fuzz_corpus/<target>/ (kept in the repo; the default test suite replays it through the
Python loaders), merges what increased coverage back into that corpus, and writes
benches/results/fuzz_parsers.json. A crash leaves its input in benches/results/fuzz-crashes/ and
a non-zero exit. Optionally also runs the hypothesis loader tests with many more examples.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .environment import cpu_info, git_commit

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fuzz_corpus"
RESULTS = ROOT / "benches" / "results"
TARGETS = {
    "xc_parser": ["cpp/fuzz/xc_parser_fuzz.cpp", "cpp/data/xc_parser.cpp"],
    "text8": ["cpp/fuzz/text8_fuzz.cpp", "cpp/data/text8.cpp", "cpp/common/rng.cpp"],
}
FLAGS = ["-std=c++17", "-O1", "-g", "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=undefined",
         f"-I{ROOT / 'cpp'}"]


def build(name: str, out_dir: Path) -> Path:
    clang = shutil.which("clang++")
    if clang is None:
        sys.exit("clang++ not found: install clang and its fuzzer runtime (apt install clang libclang-rt-14-dev)")
    exe = out_dir / f"{name}_fuzz"
    subprocess.run([clang, *FLAGS, *(str(ROOT / s) for s in TARGETS[name]), "-o", str(exe)], check=True)
    return exe


def fuzz(name: str, exe: Path, seconds: int, work: Path) -> dict:
    corpus = CORPUS / name
    fresh = work / f"{name}-new"
    fresh.mkdir()
    crashes = RESULTS / "fuzz-crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    before = len(list(corpus.iterdir()))
    t0 = time.time()
    run = subprocess.run([str(exe), f"-max_total_time={seconds}", "-max_len=8192", "-timeout=10", "-rss_limit_mb=2048",
                          f"-artifact_prefix={crashes}/{name}-", "-print_final_stats=1", str(fresh), str(corpus)],
                         capture_output=True, text=True)
    elapsed = time.time() - t0
    log = run.stderr
    stats = {k: int(v) for k, v in re.findall(r"stat::(\w+):\s+(\d+)", log)}
    last = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", log)
    # Keep the corpus minimal: merge the new inputs into the kept one only where they add coverage.
    subprocess.run([str(exe), "-merge=1", str(corpus), str(fresh)], capture_output=True, text=True)
    found = sorted(p.name for p in crashes.glob(f"{name}-*"))
    return {
        "target": name,
        "seconds": round(elapsed, 1),
        "executions": stats.get("number_of_executed_units"),
        "executions_per_second": stats.get("average_exec_per_sec"),
        "peak_rss_mb": stats.get("peak_rss_mb"),
        "edge_coverage": int(last[-1][0]) if last else None,
        "features": int(last[-1][1]) if last else None,
        "corpus_before": before,
        "corpus_after": len(list(corpus.iterdir())),
        "exit_code": run.returncode,
        "crashes": found,
        "log_tail": log.splitlines()[-12:] if run.returncode else [],
    }


def hypothesis_run(examples: int) -> dict:
    t0 = time.time()
    test = ROOT / "tests" / "python" / "test_loader_fuzz.py"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(test)], cwd=Path.home(),
                         env={**os.environ, "SLIDE_FUZZ_EXAMPLES": str(examples)}, capture_output=True, text=True)
    return {"examples_per_property": examples, "seconds": round(time.time() - t0, 1), "exit_code": run.returncode,
            "summary": run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-500:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=300, help="libFuzzer time per target")
    ap.add_argument("--targets", nargs="*", default=list(TARGETS))
    ap.add_argument("--hypothesis-examples", type=int, default=0, help="also run the hypothesis loader tests")
    args = ap.parse_args()
    commit = git_commit()  # now: the run adds what raised coverage to the corpus, which dirties the tree
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.targets:
            exe = build(name, Path(tmp))
            r = fuzz(name, exe, args.seconds, Path(tmp))
            results.append(r)
            print(f"{name}: {r['executions']:,} executions in {r['seconds']} s, coverage {r['edge_coverage']} edges, "
                  f"corpus {r['corpus_before']} -> {r['corpus_after']}, crashes: {r['crashes'] or 'none'}", flush=True)
    report = {
        "benchmark": "fuzz_parsers",
        "commit": commit,
        "cpu": cpu_info(),
        "compiler": subprocess.run(["clang++", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
        "sanitizers": ["fuzzer", "address", "undefined"],
        "libfuzzer": results,
    }
    if args.hypothesis_examples:
        report["hypothesis"] = hypothesis_run(args.hypothesis_examples)
        print(f"hypothesis: {report['hypothesis']['summary']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fuzz_parsers.json").write_text(json.dumps(report, indent=2) + "\n")
    failed = any(r["crashes"] or r["exit_code"] for r in results) or report.get("hypothesis", {}).get("exit_code")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
