"""What keeping a generated data set costs and saves: catalogue-amazon670k drawn and written into
a fresh data dir (a first run), then read back (every later run), at the CLI's default sizes.

    python -m benches.generated_store [--train 490449] [--test 153025]

Writes benches/results/generated_store.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from .environment import describe
from .result_file import write_result

RESULT = Path(__file__).resolve().parent / "results" / "generated_store.json"


def main() -> None:
    from slide.cli.sources import GENERATED
    from slide.datasets.generated_store import stored_generated

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=int, default=490_449)
    p.add_argument("--test", type=int, default=153_025)
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    name = "catalogue-amazon670k"
    with tempfile.TemporaryDirectory() as root:
        times = {}
        for what in ("drawn_and_written", "read"):
            t0 = time.perf_counter()
            _, stored = stored_generated(Path(root), name, GENERATED[name], n_train=a.train, n_test=a.test, seed=0)
            times[what] = round(time.perf_counter() - t0, 2)
            assert stored == (what == "read")
        size = sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file())
    result = {"benchmark": "generated_store", "dataset": name, "train": a.train, "test": a.test,
              "seconds": times, "bytes": size, "environment": describe(1)}
    write_result(a.out, result)


if __name__ == "__main__":
    main()
