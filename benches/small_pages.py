"""What a new large array costs on NumPy's default pages (transparent huge pages, asked for from 4
MiB) against `slide.small_pages`, in a process that already holds a network of debian-rdeps'
shape, as validation's snapshots are taken.

    python -m benches.small_pages [--rounds 5] [--threads 2]

Each round makes, side by side and kept alive so that no memory is reused: a copy of the output
layer's weights (57,489 x 256 float32, 59 MB) on each kind of page, and a whole snapshot of the
parameters (80 MB) the way `slide.early_stopping.snapshot` made it before (`np.array` copies) and
makes it now. Writes benches/results/small_pages.json (medians, and every round).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import slide
from slide import small_pages
from slide.early_stopping import parameter_names, snapshot

from .environment import describe
from .result_file import write_result

RESULT = Path(__file__).resolve().parent / "results" / "small_pages.json"
SHAPE = dict(input_dim=21_367, output_dim=57_489, hidden=[256])  # debian-rdeps, the suite's widest


def _seconds(make) -> tuple[float, object]:
    t0 = time.perf_counter()
    made = make()
    return time.perf_counter() - t0, made


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    net = slide.Network(SHAPE["input_dim"], SHAPE["output_dim"], hidden=SHAPE["hidden"], threads=a.threads,
                        matmul="bf16", seed=0)
    weights = net.weights()
    output = weights["layers.0.weight"]
    names = parameter_names(net)
    kept, rounds = [], []
    for _ in range(a.rounds):
        row = {}
        row["array_default_pages"], made = _seconds(lambda: np.array(output, copy=True))
        kept.append(made)
        row["array_small_pages"], made = _seconds(lambda: small_pages.copy(output))
        kept.append(made)
        row["snapshot_default_pages"], made = _seconds(lambda: {n: np.array(weights[n], copy=True) for n in names})
        kept.append(made)
        row["snapshot_small_pages"], made = _seconds(lambda: snapshot(net))
        kept.append(made)
        for name, values in made.items():
            assert np.array_equal(values, weights[name])
        rounds.append({k: round(v, 4) for k, v in row.items()})
    medians = {k: round(statistics.median(r[k] for r in rounds), 4) for k in rounds[0]}
    result = {
        "what": "seconds to make and fill a new array in a process holding a network of debian-rdeps' shape",
        "array_bytes": int(output.nbytes),
        "snapshot_bytes": int(sum(weights[n].nbytes for n in names)),
        "median_seconds": medians,
        "array_ratio_default_to_small": round(medians["array_default_pages"] / medians["array_small_pages"], 2),
        "snapshot_ratio_default_to_small": round(medians["snapshot_default_pages"] / medians["snapshot_small_pages"], 2),
        "rounds": rounds,
        "environment": describe(a.threads),
    }
    write_result(a.out, result)


if __name__ == "__main__":
    main()
