"""Hashing throughput per SIMD level: L bucket ids for hidden-layer-like vectors (128 dimensions,
ReLU-sparse), one thread, DWTA (SLIDE's output-layer default, K=6 L=50 windows of 8) and SimHash
(K=6 L=50, density 1/3). Each level runs in its own process (SLIDE_SIMD fixes the level per
process); the codes are checked identical across levels.

    python -m benches.hashing [--vectors 50000]

Writes benches/results/hashing.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
FAMILIES = {"dwta": dict(family="dwta", k=6, l=50), "simhash": dict(family="simhash", k=6, l=50)}


def child(vectors: int, repeats: int) -> dict:
    import slide
    from slide import _core

    rng = np.random.default_rng(0)
    queries = np.maximum(rng.standard_normal((vectors, 128)), 0).astype(np.float32)
    weights = rng.standard_normal((1000, 128)).astype(np.float32)
    out = {"level": slide.simd_level()}
    for name, cfg in FAMILIES.items():
        index = _core.LshIndex(slide.LSHConfig(**cfg).to_core(), weights, 7)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            buckets = index.buckets(queries)
            best = min(best, time.perf_counter() - t0)
        out[name] = {"vectors_per_second": vectors / best, "codes_sha1": hashlib.sha1(buckets.tobytes()).hexdigest()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vectors", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.vectors, args.repeats)))
        return 0
    import slide

    rows = []
    for level in slide.available_simd_levels():
        r = subprocess.run([sys.executable, "-m", "benches.hashing", "--child", "--vectors", str(args.vectors),
                            "--repeats", str(args.repeats)], env={**os.environ, "SLIDE_SIMD": level},
                           cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=True)
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    scalar = rows[0]
    for row in rows:
        for name in FAMILIES:
            row[name]["speedup_vs_scalar"] = row[name]["vectors_per_second"] / scalar[name]["vectors_per_second"]
            row[name]["same_codes_as_scalar"] = row[name]["codes_sha1"] == scalar[name]["codes_sha1"]
        print(f"{row['level']:12s} " + "  ".join(
            f"{n} {row[n]['vectors_per_second']:10,.0f}/s ({row[n]['speedup_vs_scalar']:.2f}x)" for n in FAMILIES),
            flush=True)
    report = {"benchmark": "hashing", "environment": describe(1), "vectors": args.vectors, "dimension": 128,
              "families": FAMILIES, "results": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hashing.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
