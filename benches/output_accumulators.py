"""What an Amazon-670K-shaped network holds while it trains in one process, now that its
batch-shared output layer never allocates gradient accumulators (cpp/nn/network_config.h,
defers_output_gradients), against the same network with them (what every network held before,
and what asking for gradients without a step still allocates).

    python -m benches.output_accumulators [--threads 2] [--points 5120]

For each hidden width, in its own process (so peak RSS is its own): a 135,909 -> hidden -> 670,091
network in mode "batch" with matmul="bf16", as the presets train it; the seconds to construct it;
one epoch over generated Amazon-670K-shaped points (`synthetic_amazon670k`, batch 256); the
network's bytes and the process's peak RSS after it; then one batch's gradients without a step,
and the bytes again. Writes benches/results/output_accumulators.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from slide.datasets.synthetic import AMAZON670K_SHAPE

from .environment import describe
from .result_file import write_result

RESULT = Path(__file__).resolve().parent / "results" / "output_accumulators.json"
HIDDEN = (128, 256)

_CHILD = """
import json, resource, sys, time
import numpy as np
import slide
from slide.datasets.synthetic import AMAZON670K_SHAPE, synthetic_amazon670k
hidden, threads, points = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
train, _ = synthetic_amazon670k(points, 1, seed=0)
X, Y = train.X, train.Y
t0 = time.perf_counter()
net = slide.Network(AMAZON670K_SHAPE["n_features"], AMAZON670K_SHAPE["n_labels"], hidden=(hidden,), mode="batch",
                    matmul="bf16", threads=threads, seed=0)
construct = time.perf_counter() - t0
t0 = time.perf_counter()
net.fit(X, Y, epochs=1, batch_size=256, progress=False)
train = time.perf_counter() - t0
held = net.memory_bytes
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
rows = np.arange(256, dtype=np.int64)
net._core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, rows, 0.0, apply=False)
print(json.dumps({"hidden": hidden, "construct_seconds": round(construct, 2), "train_seconds": round(train, 2),
                  "points": points, "memory_bytes_training": held, "memory_bytes_with_accumulators": net.memory_bytes,
                  "estimate_bytes": int(net.memory_estimate["total"]), "peak_rss_bytes_training": peak}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--points", type=int, default=5120)
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    runs = []
    for hidden in HIDDEN:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(hidden), str(a.threads), str(a.points)],
                             capture_output=True, text=True, check=True, cwd=Path.home())
        run = json.loads(out.stdout.strip().splitlines()[-1])
        run["accumulator_bytes"] = run["memory_bytes_with_accumulators"] - run["memory_bytes_training"]
        run["saved_share"] = round(run["accumulator_bytes"] / run["memory_bytes_with_accumulators"], 4)
        print(json.dumps(run), flush=True)
        runs.append(run)
    result = {
        "what": "an Amazon-670K-shaped network's bytes while it trains in one process (mode batch), and with "
                "the output layer's gradient accumulators",
        "shape": {"features": AMAZON670K_SHAPE["n_features"], "labels": AMAZON670K_SHAPE["n_labels"]},
        "runs": runs,
        "environment": describe(a.threads),
    }
    write_result(a.out, result)


if __name__ == "__main__":
    main()
