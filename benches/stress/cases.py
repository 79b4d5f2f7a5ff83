"""Random API calls and command lines, as a careless or hostile user would write them. A case is a
function of (seed, index) alone, so a worker restarted after a crash regenerates the same cases."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

import slide

INPUT_DIM, OUTPUT_DIM = 40, 30


class CaseRandom(random.Random):
    """A case's generator; `badness` scales how often a value is drawn from the bad pools, so some
    cases are all valid (and train) while others pile mistakes up."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.badness = self.choice([0.0, 0.0, 0.3, 1.0, 2.0])


def _bad(rng: random.Random, p: float) -> bool:
    return rng.random() < p * getattr(rng, "badness", 1.0)


def _maybe(rng: random.Random, good: Any, bad: list, p_bad: float = 0.12) -> Any:
    return rng.choice(bad) if _bad(rng, p_bad) else good


def lsh_kwargs(rng: random.Random) -> dict:
    kw = {}
    pools = {
        "family": (["dwta", "wta", "simhash", "minhash"], ["fly", 3, None]),
        "k": ([1, 2, 3], [0, -1, 11, 1431655765, 715827883, "2", 2.0, True]),
        "l": ([1, 4, 8], [0, -3, 5000, 2**31, "4"]),
        "range_bits": ([0, 4, 6], [-1, 25, 2**40]),
        "bin_size": ([2, 4, 8], [1, 0, 10**6, 2**31 - 1]),
        "bucket_size": ([4, 16, 128], [0, -1, 2**31]),
        "bucket_policy": (["fifo", "reservoir"], ["lifo", 1]),
        "min_active": ([0, 10, 40], [-5, 2**31]),
        "max_active": ([0, 8], [-1]),
        "batch_active": ([0, 0, 20], [-1, 2**31 - 1]),
        "rehash_every": ([50, 6400], [0, -1]),
        "rebuild_every": ([100, 128000], [0]),
        "rehash_min_updates": ([1, 4], [0, 256]),
        "schedule_growth": ([1.0, 1.1], [0.5, float("nan"), "x"]),
        "late_min_active": ([0, 60], [-1, 2**31]),
        "late_after": ([0, 500], [-1, 2**63]),
        "simhash_density": ([0.3, 1.0], [0.0, 1.5, float("inf")]),
    }
    for name, (good, bad) in pools.items():
        if rng.random() < 0.4:
            kw[name] = _maybe(rng, rng.choice(good), bad, 0.2)
    return kw


def features(rng: random.Random, n: int, cols: int = INPUT_DIM):
    X = sp.random(n, cols, density=0.2, format="csr", dtype=np.float32, random_state=rng.randrange(2**31))
    if not _bad(rng, 0.2) or X.nnz == 0:
        return X
    kind = rng.choice(["indptr", "decreasing", "index", "nan", "cols", "dense", "coo", "csc", "list", "int",
                       "complex", "1d", "none", "end"])
    if kind == "indptr":
        X.indptr = X.indptr.astype(np.int64)  # room for the huge values below
        X.indptr[rng.randrange(1, len(X.indptr))] = rng.choice([10**7, -3, 2**40])
    elif kind == "decreasing" and n > 2:
        X.indptr[2] = X.indptr[1] - 1
    elif kind == "index":
        X.indices[0] = rng.choice([cols, -1, 10**9])
    elif kind == "nan":
        X.data[0] = rng.choice([np.nan, np.inf, -np.inf])
    elif kind == "cols":
        return sp.random(n, cols + 1, density=0.2, format="csr", random_state=1)
    elif kind == "dense":
        return X.toarray()
    elif kind == "coo":
        return X.tocoo()
    elif kind == "csc":
        return X.tocsc()
    elif kind == "list":
        return X.toarray().tolist()
    elif kind == "int":
        return X.astype(np.int64)
    elif kind == "complex":
        return X.astype(np.complex64)
    elif kind == "1d":
        return X.toarray()[0]
    elif kind == "none":
        return None
    elif kind == "end":
        X.indptr[-1] += 1
    return X


def labels(rng: random.Random, n: int, out: int = OUTPUT_DIM):
    rows = [rng.sample(range(out), rng.randint(0, min(3, out))) for _ in range(n)]
    if not _bad(rng, 0.25):
        return rng.choice([rows, [np.array(r, np.int64) for r in rows], _csr(rows, out)])
    kind = rng.choice(["class", "indicator", "nested", "string", "big", "short", "float", "negative", "widecsr",
                       "bool", "none", "ids2d"])
    if kind == "class":
        return np.array([rng.randrange(out) for _ in range(n)])
    if kind == "indicator":
        return _csr(rows, out).toarray().astype(rng.choice([np.int8, bool, np.float32]))
    if kind == "nested":
        return [[r] for r in rows]
    if kind == "string":
        return [[str(v) for v in r] for r in rows]
    if kind == "big":
        return [[2**64] for _ in rows]
    if kind == "short":
        return rows[:-1]
    if kind == "float":
        return [[v + 0.5 for v in r] for r in rows]
    if kind == "negative":
        return [[-1] for _ in rows]
    if kind == "widecsr":
        return _csr(rows, out + 1)
    if kind == "bool":
        return [[True] for _ in rows]
    if kind == "ids2d":
        return np.ones((n, 2), np.int64)
    return None


def _csr(rows, out):
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    idx = np.array([v for r in rows for v in r], np.int64)
    return sp.csr_matrix((np.ones(len(idx), np.float32), idx, indptr), shape=(len(rows), out))


def network_kwargs(rng: random.Random) -> dict:
    lsh = None
    roll = rng.random()
    if roll < 0.6:
        lsh = slide.LSHConfig(**lsh_kwargs(rng))  # may raise: that is part of the case
    elif roll < 0.65:
        lsh = rng.choice(["dwta", 5, {"k": 2}])
    kw = {"input_dim": _maybe(rng, INPUT_DIM, [0, -1, 2**31, "40", 40.0, None, True]),
          "output_dim": _maybe(rng, OUTPUT_DIM, [0, 2**40, "30", None]),
          "hidden": _maybe(rng, rng.choice([(8,), 8, (8, 6), [12]]), [(), (0,), "8", [2**31], None, (8.5,), -1]),
          "lsh": lsh,
          "optimizer": _maybe(rng, rng.choice(["adam", "sgd"]), ["adagrad", 3, None]),
          "learning_rate": _maybe(rng, rng.choice([1e-3, 1e-2]), [0, -1, float("nan"), float("inf"), "fast", None]),
          "lr_schedule": _maybe(rng, rng.choice(["constant", "linear", "cosine"]), ["warp", 3]),
          "precision": _maybe(rng, rng.choice(["fp32", "bf16"]), ["fp16", None]),
          "threads": _maybe(rng, rng.choice([1, 2]), [0, -1, 5000, 2.0, "2"]),
          "seed": _maybe(rng, rng.randrange(100), [-1, 2**64, 2**70, "0", 1.5])}
    if rng.random() < 0.1:
        kw["hidden_lsh"] = rng.choice([(None,), (None, slide.LSHConfig(k=1, l=2)), ("x",), (slide.LSHConfig(),)])
    return kw


def api_case(rng: random.Random, tmp: Path, index: int) -> Callable[[], None]:
    """A constructor call and one to four method calls on the network it made."""

    def run() -> None:
        kw = network_kwargs(rng)
        if kw.get("hidden_lsh") is not None and not isinstance(kw["hidden"], (tuple, list)):
            kw["hidden"] = (8, 6)
        net = slide.Network(**kw)
        n = rng.choice([1, 5, 20, 40])
        X, Y = features(rng, n), labels(rng, n)
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(["fit", "fit", "predict", "evaluate", "loss", "save", "weights", "partial"])
            if op == "fit":
                extra = {}
                if rng.random() < 0.2:
                    extra["validation_data"] = rng.choice([(features(rng, 5), labels(rng, 5)), (X,), X, None])
                if rng.random() < 0.1:
                    extra["callback"] = rng.choice([lambda n, m: False, 3, None, lambda n, m: n.predict(X, k=1)])
                net.fit(X, Y, epochs=_maybe(rng, rng.randint(1, 2), [0, -1, 2.5, "1"]),
                        batch_size=_maybe(rng, rng.choice([1, 7, 64]), [0, -5, 2**40, None]),
                        shuffle=rng.random() < 0.8, progress=False,
                        validation_mode=_maybe(rng, "dense", ["sparse", "fuzzy"], 0.2), **extra)
            elif op == "predict":
                net.predict(X, k=_maybe(rng, rng.randint(1, 5), [0, -1, 10**6, 2.0, OUTPUT_DIM + 1]),
                            mode=_maybe(rng, "dense", ["sparse", "magic"], 0.3))
            elif op == "evaluate":
                net.evaluate(X, Y, ks=_maybe(rng, None, [(), (1, 3), 5, (0,), (1, 10**6), (1.5,)], 0.4),
                             mode=_maybe(rng, "dense", ["sparse", "magic"], 0.3))
            elif op == "loss":
                net.loss(X, Y)
            elif op == "save":
                path = rng.choice([tmp / f"m{index}.npz", tmp / f"m{index}.npz", tmp, tmp / "fifo",
                                   tmp / "missing-dir" / "x" / "m.npz"])
                net.save(path)
                if path.is_file():
                    slide.Network.load(path, threads=rng.choice([None, 1, 2]))
                    path.unlink()
            elif op == "weights":
                assert all(np.all(np.isfinite(a)) for k, a in net.weights().items() if a.dtype.kind == "f")
            elif op == "partial":
                data = net.prepare(X, Y)
                net.train_rows(data, np.arange(min(n, 3)), batch_size=rng.choice([1, 2]), lr=1e-3)

    return run


def cli_argv(rng: random.Random, tmp: Path, index: int, files: dict) -> list[str]:
    """One `slide ...` command line over the prepared tiny files, FIFOs, folders and runs."""
    command = rng.choices(["train", "evaluate", "predict", "data"], weights=[6, 1.5, 1.5, 1])[0]
    data_file = lambda: _maybe(rng, str(files["train"]), [str(files[k]) for k in  # noqa: E731
                                                           ("fifo", "dir", "missing", "broken", "binary")], 0.2)
    if command == "train":
        argv = ["train", "--quiet"]
        if rng.random() < 0.15 and files["runs"]:
            argv += ["--resume", str(rng.choice(files["runs"]))]
        elif rng.random() < 0.03:
            argv += ["--dataset", "default", "--train-samples", str(rng.randint(50, 300)), "--test-samples", "50"]
        else:
            argv += ["--train", data_file(), "--test", _maybe(rng, str(files["test"]), [str(files["fifo"])], 0.1)]
        flags = {"--epochs": ["1", "2"], "--batch-size": ["16", "64"], "--lr": ["0.01", "0.001"],
                 "--threads": ["1", "2"], "--seed": ["0", "7"], "--eval-every": ["100"], "--eval-samples": ["50"],
                 "--checkpoint-every": ["0", "600"], "--on-divergence": ["stop", "backoff"],
                 "--train-samples": ["100", "300"], "--test-samples": ["20"]}
        bad = ["0", "-5", "-1", "99999999999999999999999", "nan", "two", "", "1e400", "inf"]
        for flag, good in flags.items():
            if rng.random() < 0.3:
                argv += [flag, _maybe(rng, rng.choice(good), bad, 0.35)]
        if rng.random() < 0.15:
            argv.append("--dense")
        if rng.random() < 0.3:
            argv += ["--config", _maybe(rng, str(files["toml"][rng.randrange(len(files["toml"]))]),
                                        [str(files["fifo"]), str(files["dir"]), str(files["binary"])], 0.2)]
        out = rng.choice([tmp / f"run{index}", tmp / f"run{index}", files["runs"][0] if files["runs"] else tmp,
                          files["dir"], files["train"]])
        if rng.random() < 0.9:
            argv += ["--out", str(out)]
        if rng.random() < 0.1:
            argv.append("--overwrite")
    elif command == "evaluate":
        target = rng.choice([*(str(r) for r in files["runs"][:2]), str(files["model"]), str(files["fifo"]),
                             str(files["dir"]), str(files["broken"]), str(files["missing"])])
        argv = ["evaluate", target]
        if rng.random() < 0.7:
            argv += ["--test", data_file()]
        if rng.random() < 0.3:
            argv += ["--test-samples", rng.choice(["10", "0", "-1", "x"])]
        if rng.random() < 0.2:
            argv += ["--mode", rng.choice(["dense", "sparse", "magic"])]
    elif command == "predict":
        argv = ["predict", rng.choice([str(files["model"]), str(files["model"]), str(files["fifo"]),
                                       str(files["broken"]), str(files["dir"])]), data_file()]
        if rng.random() < 0.5:
            argv += ["--out", rng.choice([str(tmp / f"pred{index}.txt"), "-", str(files["train"]),
                                          str(files["model"]), str(files["dir"])])]
        if rng.random() < 0.5:
            argv += ["-k", rng.choice(["1", "3", "0", "-2", str(10**6), "x"])]
        if rng.random() < 0.2:
            argv += ["--mode", rng.choice(["dense", "sparse"])]
    else:
        argv = ["data", rng.choice(["info", "check", "bogus"]), rng.choice([data_file(), "default", "amazon670k",
                                                                           "synthetic-amazon670k"])]
    if rng.random() < 0.03:
        argv.insert(rng.randrange(len(argv) + 1), rng.choice(["--bogus", "-k", "--", "--help"]))
    return argv


def random_toml(rng: random.Random) -> str:
    lines = []
    values = ['1', '-5', '"two"', '2.5', 'true', '[8]', '8', '"x"', '99999999999999999999', '[]', '{a = 1}',
              '[8, 0]', 'nan', '1e-3']
    for key in ("epochs", "batch_size", "seed", "threads", "eval_samples", "on_divergence", "bogus", "lsh"):
        if rng.random() < 0.2:
            lines.append(f"{key} = {rng.choice(values)}")
    for table, keys in (("network", ("hidden", "learning_rate", "optimizer", "dense", "width")),
                        ("lsh", ("k", "l", "family", "batch_active", "kk")),
                        ("text8", ("window", "min_count"))):
        if rng.random() < 0.4 and not any(line.startswith(f"{table} =") for line in lines):
            lines.append(f"[{table}]")
            for key in keys:
                if rng.random() < 0.4:
                    lines.append(f"{key} = {rng.choice(values)}")
    return "\n".join(lines) + "\n"

