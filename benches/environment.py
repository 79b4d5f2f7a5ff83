"""What a benchmark result must carry: commit, CPU, SIMD level, threads, versions."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path


def git_commit() -> str:
    try:
        root = Path(__file__).resolve().parents[1]
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
        # Result files a benchmark run rewrites do not make the code it measured dirty.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)benches/results"], cwd=root, capture_output=True, text=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def cpu_info() -> dict:
    model, flags = platform.processor(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                break
    except OSError:
        pass
    keep = [f for f in flags if f.startswith(("avx", "fma", "sse4", "amx"))]
    return {"model": model, "simd_flags": sorted(keep)}


def describe(threads: int) -> dict:
    import numpy
    import slide

    return {
        "commit": git_commit(),
        "slide_version": slide.__version__,
        "cpu": cpu_info(),
        "simd_level": slide.simd_level(),
        "threads": threads,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }
