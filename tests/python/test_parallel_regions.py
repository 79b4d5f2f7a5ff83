"""OpenMP regions split work by the team OpenMP really gives and never let an exception escape
(which would call std::terminate and kill the Python process)."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from slide import _core

CPP = Path(__file__).resolve().parents[2] / "cpp"


def test_every_parallel_region_goes_through_the_one_helper():
    regions = {str(p.relative_to(CPP)): len(re.findall(r"#pragma\s+omp\s+parallel", p.read_text()))
               for p in CPP.rglob("*") if p.suffix in (".h", ".cpp")}
    assert {k: v for k, v in regions.items() if v} == {"common/parallel.h": 2}


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dynamic_loop", [False, True])
def test_an_exception_in_any_thread_reaches_python(threads, dynamic_loop):
    for failing in range(threads):
        with pytest.raises(MemoryError):
            _core.testing.fail_in_parallel_region(threads, failing, True, dynamic_loop)
        with pytest.raises(ValueError, match="inside a parallel region"):
            _core.testing.fail_in_parallel_region(threads, failing, False, dynamic_loop)


# One batch's loss (gradients only, no update) and the LSH tables, for networks of 1 and 3 threads
# from one seed. They must agree exactly: the shared active set, the chunked logits and the tables
# are the same computation however the threads split it.
_PROBE = textwrap.dedent("""
    import json, numpy as np, slide
    from slide import _core
    from slide.datasets import make_train_test
    train, _ = make_train_test(512, 1, 300, 9000, seed=4, avg_nnz=20, avg_labels=3)
    out = {"team": _core.testing.team_size(3)}
    for name, lsh in (("dense", None), ("batch", slide.LSHConfig(k=3, l=12, batch_active=400, min_active=9000)),
                      ("sample", slide.LSHConfig(k=3, l=12))):
        for threads in (1, 3):
            net = slide.Network(300, 9000, hidden=(24,), lsh=lsh, threads=threads, seed=5)
            d = net.prepare(train.X, train.Y)
            rows = np.arange(256, dtype=np.int64)
            s = net._core.train_batch(d.X.indptr, d.X.indices, d.X.data, d.Y.indptr, d.Y.indices, rows, 0.0, False)
            tables = net.weights().get("layers.1.lsh.ids")
            out[f"{name}{threads}"] = [s["loss"], s["active"], None if tables is None else int(tables.sum())]
    print(json.dumps(out))
""")


@pytest.mark.parametrize("limit", [None, "1", "2"])
def test_a_smaller_team_than_asked_computes_the_same_batch(limit):
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    if limit:
        env["OMP_THREAD_LIMIT"] = limit
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300,
                       cwd=os.path.expanduser("~"))
    assert r.returncode == 0, r.stderr
    import json

    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["team"] == (int(limit) if limit else 3)
    for name in ("dense", "batch"):
        assert out[f"{name}3"] == out[f"{name}1"], (name, out)
    # Per-sample sets draw their top-up from per-thread generators; the tables are the same.
    assert out["sample3"][2] == out["sample1"][2]
