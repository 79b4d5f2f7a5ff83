"""An encoder's sparse Adam step: `slide.torch.SparseAdam` against `torch.optim.SparseAdam`, side by
side in alternating rounds on the same gradients (an EmbeddingBag over Amazon-670K-shaped inputs:
135,909 features, about 75 a sample, 128 wide, batches of 256). Both start from the same weights and
see the same batches; each round records both optimizers' milliseconds per step and the largest
difference between the two copies of the weights so far (summation order; the update is the same).

    pip install ".[torch]"
    python -m benches.sparse_adam                    # 5 rounds of 40 batches
    python -m benches.sparse_adam --rounds 3 --batches 20

Writes benches/results/sparse_adam.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
WIDTH = 128


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=20_000, help="generated training points batches are drawn from")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--batches", type=int, default=40, help="steps per optimizer per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS / "sparse_adam.json")
    args = ap.parse_args()
    environment = describe(args.threads)

    import torch

    from slide.datasets import synthetic_amazon670k
    from slide.torch import SparseAdam

    torch.set_num_threads(args.threads)
    X = synthetic_amazon670k(n_train=args.points, n_test=1, seed=0)[0].X.tocsr()
    torch.manual_seed(0)
    embeddings = {name: torch.nn.EmbeddingBag(X.shape[1], WIDTH, mode="sum", sparse=True) for name in ("torch", "slide")}
    embeddings["slide"].weight.data.copy_(embeddings["torch"].weight.data)
    optimizers = {"torch": torch.optim.SparseAdam([embeddings["torch"].weight], lr=args.lr),
                  "slide": SparseAdam([embeddings["slide"].weight], lr=args.lr, threads=args.threads)}
    target = torch.linspace(-1, 1, WIDTH)
    rng = np.random.default_rng(0)
    rounds = []
    for r in range(args.rounds):
        batches = [X[rng.integers(0, X.shape[0], args.batch_size)] for _ in range(args.batches)]
        ms = {}
        for name in (("torch", "slide") if r % 2 == 0 else ("slide", "torch")):
            emb, opt, spent = embeddings[name], optimizers[name], 0.0
            for x in batches:
                h = emb(torch.from_numpy(x.indices.astype(np.int64)), torch.from_numpy(x.indptr[:-1].astype(np.int64)),
                        per_sample_weights=torch.from_numpy(x.data.astype(np.float32)))
                ((h - target) ** 2).sum().backward()
                t0 = time.perf_counter()
                opt.step()
                spent += time.perf_counter() - t0
                opt.zero_grad()
            ms[name] = 1e3 * spent / len(batches)
        gap = float((embeddings["torch"].weight - embeddings["slide"].weight).detach().abs().max())
        rounds.append({"torch_ms_per_step": round(ms["torch"], 3), "slide_ms_per_step": round(ms["slide"], 3),
                       "speedup": round(ms["torch"] / ms["slide"], 3), "largest_weight_difference": gap})
        print(f"round {r + 1}: torch {ms['torch']:.2f} ms, slide {ms['slide']:.2f} ms per step, "
              f"{rounds[-1]['speedup']}x, weights within {gap:.1e}", flush=True)
    speedups = [r["speedup"] for r in rounds]
    report = {"benchmark": "sparse_adam", "rows": int(X.shape[1]), "width": WIDTH, "batch_size": args.batch_size,
              "features_per_sample": round(X.nnz / X.shape[0], 1), "batches_per_round": args.batches,
              "lr": args.lr, "rounds": rounds, "speedup_median": float(np.median(speedups)),
              "speedup_range": [min(speedups), max(speedups)], "environment": environment}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"median {report['speedup_median']}x; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
