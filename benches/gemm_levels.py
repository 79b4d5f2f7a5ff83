"""The output layer's matrix products per SIMD level, one thread: the fp32 GEMM and the BF16 one
(BF16 inputs, fp32 sums) at the shapes the engine calls them with, in multiply-adds per second.
Each level's products are checked against float64 on the same inputs.

    python -m benches.gemm_levels [--repeats 20] [--out FILE]

Writes benches/results/gemm_levels.json (or FILE: a host whose levels differ from the one the
docs' table comes from keeps its own record beside it).

Shapes (m x n x k, C = A B): the exact scan's slices (512 output rows x 128 samples x hidden 128),
a batch's logits over a chunk of its shared active set (256 x 512 x 128), the gradient to the
hidden layer over 2,048 active outputs (256 x 128 x 2,048) and the weights' gradient over a batch
(512 x 128 x 256). The scalar level is left out: it is the tests' reference, not a speed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
SHAPES = {"exact scan slice": (512, 128, 128), "batch logits": (256, 512, 128),
          "hidden gradient": (256, 128, 2048), "weight gradient": (512, 128, 256)}


def k_pairs(b: np.ndarray) -> np.ndarray:
    """B (k x n) in the k-pair layout the BF16 GEMM takes (kernels.h)."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // 2, 2, n).transpose(0, 2, 1).reshape(k // 2, 2 * n))


def seconds(call, repeats: int) -> float:
    call()  # warm: caches, and the tile unit's first configuration
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(level: str, m: int, n: int, k: int, repeats: int, bf16: bool) -> dict:
    from slide import _core

    rng = np.random.default_rng(m + n + k)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    if bf16:
        to_bf16 = lambda x: _core._kernel_to_bf16("scalar", x.ravel()).reshape(x.shape)
        ah, bh = to_bf16(a), to_bf16(b)
        widen = lambda h: _core._kernel_from_bf16("scalar", h.ravel()).reshape(h.shape).astype(np.float64)
        exact = widen(ah) @ widen(bh)
        bp = k_pairs(bh)
        t = seconds(lambda: _core._kernel_gemm_bf16(level, ah, bp, c, False), repeats)
    else:
        exact = a.astype(np.float64) @ b.astype(np.float64)
        t = seconds(lambda: _core._kernel_gemm(level, a, b, c, False), repeats)
    error = float(np.abs(c - exact).max() / np.abs(exact).max())
    return {"seconds": t, "gmac_per_second": m * n * k / t / 1e9, "max_relative_error": error}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", type=Path, default=RESULTS / "gemm_levels.json")
    args = ap.parse_args()
    import slide
    from slide import _core

    levels = [lvl for lvl in slide.available_simd_levels() if lvl != "scalar"]
    rows = []
    for shape, (m, n, k) in SHAPES.items():
        for level in levels:
            for bf16 in (False, True):
                if bf16 and not _core.bf16_matmul_native(level):
                    continue  # the other levels run the scalar code for BF16 (kernels.h)
                r = {"shape": shape, "m": m, "n": n, "k": k, "level": level, "product": "bf16" if bf16 else "fp32",
                     **measure(level, m, n, k, args.repeats, bf16)}
                rows.append(r)
                print(f"{shape:18s} {level:12s} {r['product']:5s} {r['gmac_per_second']:8.1f} GMAC/s "
                      f"(error {r['max_relative_error']:.1e})", flush=True)
    report = {"benchmark": "gemm_levels", "environment": describe(1), "repeats": args.repeats,
              "chosen_level": slide.simd_level(), "bf16_matmul_native": bool(_core.bf16_matmul_native()),
              "results": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
