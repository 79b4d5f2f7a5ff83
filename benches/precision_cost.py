"""What precision="bf16", matmul="bf16" and a cheaper optimizer state can buy, on generated
Amazon-670K-shaped data (135,909 -> 128 -> 670,091): training samples/s of each mode (SLIDE's
per-sample active sets, the batch-shared set) with Adam and with plain SGD, in fp32 and in bf16,
and the batch-shared set's matrix products in BF16 (per sample there are none), in one process.

    python -m benches.precision_cost [--samples 25600] [--threads 2] [--repeats 3]

SGD keeps no optimizer state, so SGD / Adam bounds what any cheaper state (row-wise or BF16
moments, momentum-free variants) could gain; bf16 / fp32 is what BF16 weight reads gain, and
matmul bf16 / fp32 what BF16 products gain. The
configurations run round-robin `--repeats` times and each reports its median (see
benches/training_rate.py). Writes benches/results/precision_cost.json.
"""

from __future__ import annotations

import argparse
import functools

from .training_rate import add_arguments, generated_data, modes, round_robin_medians, samples_per_second, write_report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    data = generated_data(args)
    kinds = [(opt, prec, "fp32") for opt in ("adam", "sgd") for prec in ("fp32", "bf16")]
    configs = {(mode, opt, prec, matmul): functools.partial(
        samples_per_second, data, lsh, threads=args.threads, warmup=args.warmup, samples=args.samples,
        batch_size=args.batch_size, optimizer=opt, precision=prec, matmul=matmul)
        for mode, lsh in modes().items()
        for opt, prec, matmul in kinds + ([("adam", "fp32", "bf16")] if lsh.batch_active else [])}
    rates = round_robin_medians(configs, args.repeats)
    rows = []
    for (mode, opt, prec, matmul), r in rates.items():
        vs_adam_fp32 = r["median"] / rates[(mode, "adam", "fp32", "fp32")]["median"]
        rows.append({"mode": mode, "optimizer": opt, "precision": prec, "matmul": matmul,
                     "samples_per_second": r["median"], "runs": r["runs"], "vs_adam_fp32": vs_adam_fp32})
        print(f"{mode:20s} {opt:4s} {prec} matmul {matmul}: {r['median']:8,.0f} samples/s  "
              f"({vs_adam_fp32:.2f}x Adam fp32)", flush=True)
    write_report("precision_cost", args, args.threads, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
