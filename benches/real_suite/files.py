"""Where a built set lives and how it is recorded: DATA_DIR/<set>/{train,test}.txt in the XC text
format, with build.json holding each file's sha256 and where it came from. Data never enters the
repository; the sha256s go into every result so two runs are known to have seen the same bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import scipy.sparse as sp

DEFAULT_DATA_DIR = Path.home() / ".cache" / "slide-real-suite"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def set_dir(data_dir: Path, name: str) -> Path:
    return data_dir / name


def built_sets(data_dir: Path, names) -> list[Path]:
    """The folders of these built sets, for a benchmark that reads them; exits naming what is
    missing and how to build it."""
    missing = [str(set_dir(data_dir, name)) for name in names if not is_built(data_dir, name)]
    if missing:
        raise SystemExit(f"{', '.join(missing)}: not built; build the suite with python -m benches.real_suite "
                         "--build-only")
    return [set_dir(data_dir, name) for name in names]


def is_built(data_dir: Path, name: str) -> bool:
    return (set_dir(data_dir, name) / "build.json").is_file()


def write_set(data_dir: Path, name: str, train: tuple, test: tuple, source: dict) -> dict:
    """Write (X, Y) train and test as XC files and build.json last, so a half-built set is not 'built'."""
    from slide.datasets import write_xc

    folder = set_dir(data_dir, name)
    folder.mkdir(parents=True, exist_ok=True)
    n_labels = max(train[1].shape[1], test[1].shape[1])
    n_features = max(train[0].shape[1], test[0].shape[1])
    for part, (X, Y) in (("train", train), ("test", test)):
        X = sp.csr_matrix(X)
        X.resize(X.shape[0], n_features)
        Y = sp.csr_matrix(Y)
        Y.resize(Y.shape[0], n_labels)
        write_xc(folder / f"{part}.txt", X, Y)
    record = {"name": name, "source": source,
              "train_points": train[0].shape[0], "test_points": test[0].shape[0],
              "features": n_features, "labels": n_labels,
              "sha256": {part: sha256(folder / f"{part}.txt") for part in ("train", "test")}}
    (folder / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def read_record(data_dir: Path, name: str) -> dict:
    return json.loads((set_dir(data_dir, name) / "build.json").read_text())
