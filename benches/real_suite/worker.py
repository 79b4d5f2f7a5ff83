"""One method on one built set, in a process of its own (so its peak RSS is its own):

    python -m benches.real_suite.worker SET_FOLDER METHOD THREADS SEED OUT.json"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from .methods import METHODS


def main(folder: str, method: str, threads: str, seed: str, out: str) -> int:
    from slide.datasets import load_xc
    from slide.metrics import inverse_propensities, xc_report

    folder_path = Path(folder)
    train = load_xc(folder_path / "train.txt", cache=False)
    test = load_xc(folder_path / "test.txt", cache=False)
    with tempfile.TemporaryDirectory() as work:
        got = METHODS[method](folder_path, train, test, int(threads), int(seed), Path(work))
    metrics = xc_report(got.pop("ids"), test.Y, inverse_propensities(train.Y))
    got = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in got.items()}
    Path(out).write_text(json.dumps({**got, **{k: round(v, 4) for k, v in metrics.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
