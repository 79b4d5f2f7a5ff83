"""The extension built with AddressSanitizer + UndefinedBehaviorSanitizer, running the test suite.

    python -m benches.sanitizers [--tests tests/python/test_lsh.py ...] [--all]

Builds cpp/ with -DSLIDE_SANITIZE=ON into build/sanitize, lays the package out beside it with the
sanitized _core, and runs pytest against it with libasan preloaded (Python itself is not
instrumented, so leak checking is off: CPython's own allocations would drown it). Any ASan or
UBSan report aborts the process that hit it, so it fails the test; reports from subprocesses
(the CLI tests) are collected from the log files too. Writes benches/results/sanitizers.json.

HOGWILD training writes shared weights from several threads without locks by design (see the
docs/how-it-works.md, "Threads and HOGWILD"), which is why ThreadSanitizer is not part of this run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .environment import cpu_info, git_commit

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "sanitize"
RESULTS = ROOT / "benches" / "results"
# The engine, the parsers, model files and the run loop; the default suite minus nothing that
# touches C++ (pure-Python metric tests add no coverage of the extension but cost little).
DEFAULT_TESTS = ["tests/python"]
# Reports from third-party code (Open MPI's launcher), each with its reason; never slide's own.
SUPPRESSIONS = Path(__file__).resolve().parent / "asan_suppressions.txt"


def build() -> Path:
    import pybind11

    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-G", "Ninja", "-DSKBUILD_PROJECT_NAME=slide",
                    "-DSKBUILD_PROJECT_VERSION=0.1.0", f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
                    "-DSLIDE_SANITIZE=ON", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                    f"-DPython_EXECUTABLE={sys.executable}"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(BUILD), "-j", str(os.cpu_count() or 1)], check=True)
    (so,) = BUILD.glob("_core*.so")
    package = BUILD / "pkg"
    shutil.rmtree(package, ignore_errors=True)
    shutil.copytree(ROOT / "slide", package / "slide", ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
    shutil.copy2(so, package / "slide" / so.name)
    return package


def sanitizer_env(package: Path, logs: Path) -> dict:
    """The environment that runs Python against the sanitized package, reports going to `logs`."""
    lib = lambda name: subprocess.run(["g++", f"-print-file-name={name}"], capture_output=True,  # noqa: E731
                                      text=True).stdout.strip()
    # libstdc++ preloaded too, so ASan's __cxa_throw interceptor finds the real one (else the
    # first C++ exception, i.e. the first ValueError a test expects, trips an ASan CHECK).
    preload = f"{lib('libasan.so')} {lib('libstdc++.so')}"
    return {
        **os.environ,
        "PYTHONPATH": str(package),
        "LD_PRELOAD": preload,
        "ASAN_OPTIONS": f"detect_leaks=0:abort_on_error=1:log_path={logs}/asan:suppressions={SUPPRESSIONS}",
        "UBSAN_OPTIONS": f"halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path={logs}/ubsan",
        "SLIDE_FUZZ_EXAMPLES": "300",  # hypothesis runs ~3x slower under ASan
        "SLIDE_SANITIZED": "1",  # tests that measure resident memory skip: ASan's allocator decides it
    }


def run_tests(package: Path, tests: list[str], logs: Path) -> dict:
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    env = sanitizer_env(package, logs)
    t0 = time.time()
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not slow",
                          *(str(ROOT / t) for t in tests)], cwd=Path.home(), env=env, capture_output=True, text=True)
    reports = sorted(p.name for p in logs.iterdir())
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    return {
        "tests": tests,
        "seconds": round(time.time() - t0, 1),
        "pytest_exit_code": run.returncode,
        "summary": summary,
        "passed": int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0,
        "failed": int(m.group(1)) if (m := re.search(r"(\d+) failed", summary)) else 0,
        "sanitizer_reports": [{"file": name, "head": (logs / name).read_text()[:2000]} for name in reports],
        "failures_tail": run.stdout.splitlines()[-40:] if run.returncode else [],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", nargs="*", default=DEFAULT_TESTS)
    args = ap.parse_args()
    t0 = time.time()
    package = build()
    build_seconds = time.time() - t0
    result = run_tests(package, args.tests, BUILD / "logs")
    report = {"benchmark": "sanitizers", "commit": git_commit(), "cpu": cpu_info(),
              "sanitizers": ["address", "undefined"], "compiler": "gcc",
              "build_seconds": round(build_seconds, 1), **result}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sanitizers.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"sanitized build: {result['summary']} in {result['seconds']} s; "
          f"{len(result['sanitizer_reports'])} sanitizer reports", flush=True)
    if result["pytest_exit_code"] != 0:  # CI keeps only this process's output: say which tests failed
        print("\n".join(result["failures_tail"]), flush=True)
    for report in result["sanitizer_reports"]:
        print(f"--- {report['file']}\n{report['head']}", flush=True)
    return 0 if result["pytest_exit_code"] == 0 and not result["sanitizer_reports"] else 1


if __name__ == "__main__":
    sys.exit(main())
